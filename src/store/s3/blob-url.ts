/** Where an S3BlobStore keeps its files, from `s3://bucket/prefix?endpoint=…&region=…&force_path_style=true`. */
export interface BlobLocation {
  bucket: string;
  /** Empty, or ending in `/`. */
  prefix: string;
  /** An S3-compatible server's address (MinIO, Ceph, Garage…); none: AWS (or AWS_ENDPOINT_URL). */
  endpoint?: string;
  region?: string;
  /** Bucket in the path (`host/bucket/key`) rather than the host name: what most S3-compatible servers want. */
  forcePathStyle: boolean;
}

const PARAMETERS = new Set(['endpoint', 'region', 'force_path_style']);

/** Parses and checks a blob URL; throws an Error whose message completes "blob_url …". */
export function parseBlobUrl(value: string): BlobLocation {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new Error('is not a URL (s3://bucket/prefix)');
  }
  if (url.protocol !== 's3:') throw new Error('must start with s3:// (s3://bucket/prefix)');
  if (url.username || url.password) throw new Error('must not hold credentials: they come from AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY');
  const bucket = url.hostname;
  if (!/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/.test(bucket)) throw new Error(`names no valid bucket (${JSON.stringify(bucket)})`);
  for (const name of url.searchParams.keys()) {
    if (!PARAMETERS.has(name)) throw new Error(`has an unknown parameter ${name} (known: ${[...PARAMETERS].join(', ')})`);
  }
  const path = decodeURIComponent(url.pathname).replace(/^\/+/, '').replace(/\/+$/, '');
  const endpoint = url.searchParams.get('endpoint') ?? undefined;
  if (endpoint !== undefined) {
    let parsed: URL;
    try {
      parsed = new URL(endpoint);
    } catch {
      throw new Error('has an endpoint that is not a URL');
    }
    if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') throw new Error('has an endpoint that is not http(s)');
  }
  const style = url.searchParams.get('force_path_style');
  if (style !== null && style !== 'true' && style !== 'false') throw new Error('has force_path_style other than true or false');
  return {
    bucket,
    prefix: path ? `${path}/` : '',
    ...(endpoint ? { endpoint } : {}),
    ...(url.searchParams.get('region') ? { region: url.searchParams.get('region')! } : {}),
    // An own endpoint is almost always a server that wants path style; say false to turn it off.
    forcePathStyle: style === null ? endpoint !== undefined : style === 'true',
  };
}
