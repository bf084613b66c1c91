// The document viewer: keyboard navigation, zoom, and the search's words marked on the page
// image. Navigation itself is plain links (the page works without this script); the keys only
// follow them. Zoom is remembered in localStorage across pages.

const ZOOM_KEY = "lexweb.viewer.zoom";
const STEPS = [50, 75, 100, 150, 200];
const CSS_DPI = 96; // 100% shows the page at its printed size

const viewer = document.querySelector("[data-viewer]");
const image = document.getElementById("viewer-image");
const canvas = viewer?.querySelector(".viewer-canvas");

function follow(name) {
  const link = viewer?.querySelector(`a[data-key="${name}"]`);
  if (link) window.location.assign(link.href);
}

function storedZoom() {
  try {
    const value = window.localStorage.getItem(ZOOM_KEY);
    return value === "page" || STEPS.includes(Number(value)) ? value : "width";
  } catch {
    return "width"; // storage refused (private mode): fit width
  }
}

function remember(zoom) {
  try {
    window.localStorage.setItem(ZOOM_KEY, zoom);
  } catch {
    // not remembered; the zoom still applies to this page
  }
}

function renderedDpi(zoom) {
  // Enough pixels for the zoom on this screen, within what the endpoint renders (36-300).
  const percent = Number(zoom) || 100;
  const wanted = (CSS_DPI * percent * (window.devicePixelRatio || 1)) / 100;
  return wanted > 200 ? 300 : wanted > 150 ? 200 : 150;
}

function applyZoom(zoom) {
  if (!image || !canvas) return;
  canvas.dataset.zoom = zoom;
  canvas.classList.toggle("viewer-canvas--width", zoom === "width");
  canvas.classList.toggle("viewer-canvas--page", zoom === "page");
  const percent = Number(zoom);
  if (percent) {
    const dpi = renderedDpi(percent);
    if (Number(image.dataset.dpi) !== dpi) {
      const url = new URL(image.src, window.location.href);
      url.searchParams.set("dpi", String(dpi));
      image.dataset.dpi = String(dpi);
      image.src = url.pathname + url.search;
    }
    const size = () => {
      // The natural width was rendered at data-dpi; CSS pixels are 1/96 inch.
      const inches = image.naturalWidth / Number(image.dataset.dpi);
      image.style.width = `${Math.round((inches * CSS_DPI * percent) / 100)}px`;
    };
    if (image.complete && image.naturalWidth) size();
    image.addEventListener("load", size, { once: true });
  } else {
    image.style.width = "";
  }
  for (const button of viewer.querySelectorAll("button[data-zoom]")) {
    button.setAttribute("aria-pressed", String(button.dataset.zoom === zoom));
  }
}

function stepZoom(direction) {
  const now = Number(canvas?.dataset.zoom) || 100;
  const at = STEPS.findIndex((step) => step >= now);
  const next = STEPS[Math.min(Math.max((at === -1 ? STEPS.length - 1 : at) + direction, 0), STEPS.length - 1)];
  remember(String(next));
  applyZoom(String(next));
}

function setZoom(zoom) {
  remember(zoom);
  applyZoom(zoom);
}

function typing(target) {
  return target instanceof HTMLElement &&
    (target.isContentEditable || ["INPUT", "TEXTAREA", "SELECT", "BUTTON"].includes(target.tagName));
}

function onKey(event) {
  if (event.defaultPrevented || event.ctrlKey || event.metaKey || event.altKey) return;
  if (typing(event.target)) return;
  // Arrows and PageUp/PageDown scroll the page text when it has the focus.
  const inText = event.target instanceof HTMLElement && event.target.closest(".page-text");
  const actions = {
    j: () => follow("next-page"),
    k: () => follow("previous-page"),
    n: () => follow("next-document"),
    p: () => follow("previous-document"),
    s: () => follow(viewer.querySelector('a[data-key="stamped"][aria-current]') ? "original" : "stamped"),
    "+": () => stepZoom(1),
    "=": () => stepZoom(1),
    "-": () => stepZoom(-1),
    w: () => setZoom("width"),
    f: () => setZoom("page"),
  };
  if (!inText) {
    Object.assign(actions, {
      ArrowRight: actions.j,
      PageDown: actions.j,
      ArrowLeft: actions.k,
      PageUp: actions.k,
    });
  }
  const action = actions[event.key];
  if (action) {
    event.preventDefault();
    action();
  }
}

function drawBox(overlay, [x0, y0, x1, y1]) {
  const box = document.createElement("div");
  box.className = "viewer-hit";
  box.style.left = `${x0 * 100}%`;
  box.style.top = `${y0 * 100}%`;
  box.style.width = `${(x1 - x0) * 100}%`;
  box.style.height = `${(y1 - y0) * 100}%`;
  overlay.append(box);
}

async function drawHits() {
  const url = viewer?.dataset.hitsUrl;
  const overlay = viewer?.querySelector(".viewer-overlay");
  const status = viewer?.querySelector(".viewer-hits");
  if (!url || !overlay || !status) return;
  let found;
  try {
    const response = await fetch(url, { headers: { Accept: "application/json" }, credentials: "same-origin" });
    if (!response.ok) throw new Error(`HTTP ${response.status}`);
    found = await response.json();
  } catch {
    status.textContent = "The search's words could not be marked on the image.";
    return;
  }
  for (const box of found.boxes) drawBox(overlay, box);
  const count = found.boxes.length;
  status.textContent = count
    ? `${count}${found.truncated ? "+" : ""} matching word${count === 1 ? "" : "s"} marked on the image`
    : "No matching words located on the image.";
}

if (viewer) {
  document.addEventListener("keydown", onKey);
  const zoom = viewer.querySelector(".viewer-zoom");
  if (zoom && image) {
    zoom.hidden = false;
    zoom.addEventListener("click", (event) => {
      const button = event.target instanceof Element ? event.target.closest("[data-zoom]") : null;
      if (button) setZoom(button.dataset.zoom);
    });
    applyZoom(storedZoom());
  }
  drawHits();
}
