// Pan and zoom of the flow page as SVG viewBox arithmetic: the drawing keeps its coordinates,
// only the window onto it moves. Screen sizes are CSS pixels of the <svg> element.

export interface ViewBox {
  x: number;
  y: number;
  w: number;
  h: number;
}

/** The smallest and largest width of the window, relative to the drawing's larger side. */
const MIN_W = 120;
const MAX_SPAN = 4;

/**
 * The whole drawing, centred, with `pad` around it, at the screen's aspect ratio; never larger
 * than life (a three-box flow stays at its own size instead of filling the screen).
 */
export function fitViewBox(contentW: number, contentH: number, screenW: number, screenH: number, pad = 16): ViewBox {
  const cw = Math.max(contentW, 1) + 2 * pad;
  const ch = Math.max(contentH, 1) + 2 * pad;
  const sized = screenW > 0 && screenH > 0;
  const aspect = sized ? screenW / screenH : cw / ch;
  const w = Math.max(cw, ch * aspect, sized ? screenW : 0);
  const h = w / aspect;
  return { x: (contentW - w) / 2, y: (contentH - h) / 2, w, h };
}

/**
 * Zooms by `factor` (> 1 zooms in) keeping the drawing point under the pointer where it is.
 * (fx, fy) is the pointer's place on the screen as fractions of its width and height.
 */
export function zoomAt(vb: ViewBox, factor: number, fx: number, fy: number, contentSpan: number): ViewBox {
  const maxW = Math.max(contentSpan, MIN_W) * MAX_SPAN;
  const w = Math.min(maxW, Math.max(MIN_W, vb.w / factor));
  const k = w / vb.w;
  const h = vb.h * k;
  return { x: vb.x + (vb.w - w) * fx, y: vb.y + (vb.h - h) * fy, w, h };
}

/** Moves the window so the drawing follows a drag of (dx, dy) screen pixels. */
export function panBy(vb: ViewBox, dx: number, dy: number, screenW: number, screenH: number): ViewBox {
  return { ...vb, x: vb.x - (dx * vb.w) / Math.max(screenW, 1), y: vb.y - (dy * vb.h) / Math.max(screenH, 1) };
}

export const viewBoxAttr = (vb: ViewBox) => `${vb.x.toFixed(1)} ${vb.y.toFixed(1)} ${vb.w.toFixed(1)} ${vb.h.toFixed(1)}`;
