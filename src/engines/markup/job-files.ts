/**
 * Files the engine writes into each job's working directory for pandoc: our own, read by pandoc
 * outside its sandbox (filters and templates are not documents), never anything a user sent.
 */

/**
 * A Lua filter that makes the document inert before pandoc writes it, whatever the target.
 * pandoc passes through what its readers keep: raw HTML, LaTeX or OOXML (rst's `raw`
 * directive, org's export blocks, Markdown's raw HTML), every attribute of an HTML element
 * (`onclick`, `style`), any link scheme (`javascript:`), and metadata that standalone templates
 * insert raw (`header-includes`) or that writers read as files (`css`, `cover-image`). Measured
 * with pandoc 2.17: all of these reached HTML, EPUB and Markdown outputs. Here they go:
 * - raw blocks and inlines of every format are dropped;
 * - attributes keep only a few harmless keys (ids and classes stay);
 * - a link to anything but http(s), mailto, a fragment or a relative address keeps its text
 *   only; an image keeps its alt text only unless it is http(s), relative or a PNG/JPEG/GIF/WebP
 *   `data:` address, and named like an image when it has an extension (pandoc's HTML writer
 *   makes `<embed>`, `<video>` or `<audio>` of anything else);
 * - metadata keeps the descriptive fields (title, author, date, ...) only.
 */
export const INERT_FILTER = String.raw`-- convd: makes the document inert before pandoc writes it (src/engines/markup/job-files.ts).
local KEEP_ATTRIBUTES = { width = true, height = true, title = true, lang = true, dir = true, ['custom-style'] = true }
local KEEP_META = {
  title = true, subtitle = true, author = true, date = true, lang = true, dir = true, abstract = true,
  description = true, keywords = true, subject = true, rights = true, publisher = true, creator = true, contributor = true,
}
local SAFE_SCHEMES = { http = true, https = true, mailto = true }
local SAFE_DATA_IMAGES = { ['image/png'] = true, ['image/jpeg'] = true, ['image/gif'] = true, ['image/webp'] = true }
local IMAGE_EXTENSIONS = {
  png = true, jpg = true, jpeg = true, jpe = true, jfif = true, gif = true, webp = true, svg = true, bmp = true,
  tif = true, tiff = true, avif = true, emf = true, wmf = true, ico = true,
}

-- Browsers ignore control characters and white space in a scheme ("java\tscript:"), and pandoc
-- percent-encodes white space in addresses: so this decodes, then drops both before it looks.
local function safe_target(url, image)
  local decoded = url:gsub('%%(%x%x)', function(hex) return string.char(tonumber(hex, 16)) end)
  local bare = decoded:gsub('[%c%s]', ''):lower()
  local scheme = bare:match('^([%a][%w+.-]*):')
  if scheme == nil then return true end
  if SAFE_SCHEMES[scheme] then return true end
  if image and scheme == 'data' then return SAFE_DATA_IMAGES[bare:match('^data:([^;,]*)')] == true end
  return false
end

local function image_named(url)
  local path = url:gsub('[?#].*$', '')
  local extension = path:match('%.([%w]+)$')
  return extension == nil or IMAGE_EXTENSIONS[extension:lower()] == true
end

local function inert_attr(attr)
  local kept = {}
  for _, pair in ipairs(attr.attributes) do
    if KEEP_ATTRIBUTES[pair[1]] then table.insert(kept, { pair[1], pair[2] }) end
  end
  return pandoc.Attr(attr.identifier, attr.classes, kept)
end

-- nil (unchanged: nothing is rebuilt) unless an attribute has to go.
local function clean(el)
  for _, pair in ipairs(el.attr.attributes) do
    if not KEEP_ATTRIBUTES[pair[1]] then
      el.attr = inert_attr(el.attr)
      return el
    end
  end
  return nil
end

local function clean_rows(rows)
  for _, row in ipairs(rows) do
    row.attr = inert_attr(row.attr)
    for _, cell in ipairs(row.cells) do cell.attr = inert_attr(cell.attr) end
  end
  return rows
end

return {
  {
    RawBlock = function() return {} end,
    RawInline = function() return {} end,
    Link = function(el)
      if not safe_target(el.target, false) then return el.content end
      return clean(el)
    end,
    Image = function(el)
      if not safe_target(el.src, true) or not image_named(el.src) then return el.caption end
      return clean(el)
    end,
    -- Every other element with attributes (pandoc 3 adds Figure; 2.x has none and ignores the key).
    Span = clean, Code = clean, Div = clean, Header = clean, CodeBlock = clean, Figure = clean,
    Table = function(el)
      el.attr = inert_attr(el.attr)
      el.head.attr = inert_attr(el.head.attr)
      el.head.rows = clean_rows(el.head.rows)
      local bodies = el.bodies
      for _, body in ipairs(bodies) do
        body.attr = inert_attr(body.attr)
        body.head = clean_rows(body.head)
        body.body = clean_rows(body.body)
      end
      el.bodies = bodies
      el.foot.attr = inert_attr(el.foot.attr)
      el.foot.rows = clean_rows(el.foot.rows)
      return el
    end,
    Meta = function(meta)
      for key, _ in pairs(meta) do
        if not KEEP_META[key] then meta[key] = nil end
      end
      return meta
    end,
  },
}
`;

/**
 * The page an HTML result is: pandoc's body in a head of our own (pandoc's default template
 * would insert `header-includes` and link `css` from the document's metadata; the filter drops
 * those too, this does not depend on it). Variables are pandoc's, rendered and escaped by it.
 */
export const HTML_TEMPLATE = `<!DOCTYPE html>
<html>
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>$pagetitle$</title>
<style>
body { max-width: 42em; margin: 2em auto; padding: 0 1em; font-family: system-ui, sans-serif; line-height: 1.5; color: #1a1a1a; }
h1, h2, h3, h4, h5, h6 { line-height: 1.2; margin-top: 1.4em; }
pre, code { font-family: ui-monospace, monospace; font-size: 0.9em; }
pre { padding: 0.75em; overflow-x: auto; background: #f4f4f4; }
blockquote { margin: 1em 0; padding-left: 1em; border-left: 3px solid #ccc; color: #555; }
table { border-collapse: collapse; margin: 1em 0; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.5em; }
img { max-width: 100%; }
nav#TOC { margin-bottom: 2em; }
.header-section-number { margin-right: 0.5em; }
span.smallcaps { font-variant: small-caps; }
div.line-block { white-space: pre-line; }
</style>
</head>
<body>
$if(title)$
<header id="title-block-header">
<h1 class="title">$title$</h1>
$if(subtitle)$
<p class="subtitle">$subtitle$</p>
$endif$
$for(author)$
<p class="author">$author$</p>
$endfor$
$if(date)$
<p class="date">$date$</p>
$endif$
</header>
$endif$
$if(toc)$
<nav id="TOC" role="doc-toc">
$table-of-contents$
</nav>
$endif$
$body$
</body>
</html>
`;
