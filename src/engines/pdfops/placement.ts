import type { Position } from './formats.ts';

/** A page's visible area in its own coordinates, and how it is turned when shown. */
export interface PageFrame {
  x: number;
  y: number;
  width: number;
  height: number;
  /** /Rotate: 0, 90, 180 or 270, clockwise. */
  rotation: number;
}

/** A line of text's extent from its origin: its width along the baseline, ascent above, descent below. */
export interface TextExtent {
  width: number;
  ascent: number;
  descent: number;
}

/** Where to put the text's origin and at what angle, in the page's own coordinates. */
export interface Placement {
  x: number;
  y: number;
  angle: number;
}

/** /Rotate as one of 0, 90, 180, 270 (files hold -90 and 450 too). */
export function normalRotation(degrees: number): number {
  const turned = ((Math.round(degrees / 90) * 90) % 360 + 360) % 360;
  return turned;
}

/**
 * Places a line of text on the page as a reader sees it: `position` and `angle` (counter-clockwise)
 * are of the page as shown, which a page's /Rotate turns clockwise from its own coordinates. The
 * text's turned bounding box is what is centred or kept `margin` from the edges.
 */
export function placeText(frame: PageFrame, extent: TextExtent, angle: number, position: Position, margin: number): Placement {
  const rotation = normalRotation(frame.rotation);
  const sideways = rotation === 90 || rotation === 270;
  const [shownWidth, shownHeight] = sideways ? [frame.height, frame.width] : [frame.width, frame.height];
  const radians = (angle * Math.PI) / 180;
  const along = [Math.cos(radians), Math.sin(radians)] as const;
  const up = [-Math.sin(radians), Math.cos(radians)] as const;
  const corners = [[0, -extent.descent], [extent.width, -extent.descent], [0, extent.ascent], [extent.width, extent.ascent]]
    .map(([a, b]) => [a! * along[0] + b! * up[0], a! * along[1] + b! * up[1]] as const);
  const xs = corners.map((c) => c[0]);
  const ys = corners.map((c) => c[1]);
  const [minX, maxX, minY, maxY] = [Math.min(...xs), Math.max(...xs), Math.min(...ys), Math.max(...ys)];
  const [vertical, horizontal] = position === 'center' ? ['center', 'center'] : position.split('-') as [string, string];
  const shownX = horizontal === 'left' ? margin - minX : horizontal === 'right' ? shownWidth - margin - maxX : shownWidth / 2 - (minX + maxX) / 2;
  const shownY = vertical === 'bottom' ? margin - minY : vertical === 'top' ? shownHeight - margin - maxY : shownHeight / 2 - (minY + maxY) / 2;
  const [x, y] = toPage(frame, rotation, shownX, shownY);
  return { x, y, angle: angle + rotation };
}

/** A point of the page as shown to the page's own coordinates. */
function toPage(frame: PageFrame, rotation: number, shownX: number, shownY: number): [number, number] {
  switch (rotation) {
    case 90: return [frame.x + frame.width - shownY, frame.y + shownX];
    case 180: return [frame.x + frame.width - shownX, frame.y + frame.height - shownY];
    case 270: return [frame.x + shownY, frame.y + frame.height - shownX];
    default: return [frame.x + shownX, frame.y + shownY];
  }
}
