// The document viewer: page turns without reloading the page, keyboard navigation, zoom, and the
// search's words marked on the page image. Navigation itself is plain links and a form (the page
// works without this script); here a turn to another page of the same document (its buttons,
// keys, thumbnails, the page box, the stamped / original toggle) asks the server for the viewer
// alone (`?part=viewer`, templates/documents/_viewer.html), puts it in place once its image is
// drawn, and records the address (history.pushState), so reload and back keep working. Pages
// shown before are kept here, image and all, so turning back to one is immediate. Zoom is
// remembered in localStorage across pages.

import { serverHtml } from "./server_html.js";

const ZOOM_KEY = "lexweb.viewer.zoom";
const STEPS = [50, 75, 100, 150, 200];
const CSS_DPI = 96; // 100% shows the page at its printed size
const KEPT = 12; // pages kept for turning back to them (each holds its decoded image)

const kept = new Map(); // address (path and query) -> its viewer section, as last shown
let shown = ""; // the address of the viewer section in place
let latest = 0; // the turn under way; an older one that finishes later is dropped

const viewer = () => document.querySelector("[data-viewer]");
const imageIn = (section) => section?.querySelector("#viewer-image");

function address(url) {
  const at = new URL(url, window.location.href);
  return at.pathname + at.search;
}

function thisDocument(url) {
  const at = new URL(url, window.location.href);
  return at.origin === window.location.origin && at.pathname === window.location.pathname;
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

function applyZoom(section, zoom) {
  const image = imageIn(section);
  const canvas = section?.querySelector(".viewer-canvas");
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
  for (const button of section.querySelectorAll("button[data-zoom]")) {
    button.setAttribute("aria-pressed", String(button.dataset.zoom === zoom));
  }
}

function setZoom(zoom) {
  remember(zoom);
  applyZoom(viewer(), zoom);
}

function stepZoom(direction) {
  const now = Number(viewer()?.querySelector(".viewer-canvas")?.dataset.zoom) || 100;
  const at = STEPS.findIndex((step) => step >= now);
  const next = STEPS[Math.min(Math.max((at === -1 ? STEPS.length - 1 : at) + direction, 0), STEPS.length - 1)];
  setZoom(String(next));
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

async function drawHits(section) {
  const url = section.dataset.hitsUrl;
  const overlay = section.querySelector(".viewer-overlay");
  const status = section.querySelector(".viewer-hits");
  if (!url || !overlay || !status || section.dataset.hitsDrawn) return;
  section.dataset.hitsDrawn = "1"; // once per page: a page turned back to keeps its marks
  let found;
  try {
    const response = await fetch(url, { headers: { Accept: "application/json" }, credentials: "same-origin" });
    if (!response.ok) throw new Error(`HTTP ${response.status}`);
    found = await response.json();
  } catch {
    status.textContent = "The search's words could not be marked on the image.";
    delete section.dataset.hitsDrawn; // tried again when the page is turned back to
    return;
  }
  for (const box of found.boxes) drawBox(overlay, box);
  const count = found.boxes.length;
  status.textContent = count
    ? `${count}${found.truncated ? "+" : ""} matching word${count === 1 ? "" : "s"} marked on the image`
    : "No matching words located on the image.";
}

// The section in place (the first, or one a turn put there): its zoom buttons shown, the zoom
// applied, the search's words marked.
function start(section) {
  const zoom = section.querySelector(".viewer-zoom");
  if (zoom && imageIn(section)) {
    zoom.hidden = false;
    applyZoom(section, storedZoom());
  }
  drawHits(section);
}

function keep(key, section) {
  kept.delete(key);
  kept.set(key, section);
  while (kept.size > KEPT) kept.delete(kept.keys().next().value);
}

async function fetchSection(url) {
  const part = new URL(url, window.location.href);
  part.hash = "";
  part.searchParams.set("part", "viewer");
  let holder = null;
  try {
    holder = await serverHtml(part.pathname + part.search);
  } catch {
    holder = null; // the network failed: the caller loads the page as a link would
  }
  const section = holder?.querySelector("[data-viewer]");
  if (!section) return null;
  const zoom = storedZoom();
  if (section.querySelector(".viewer-zoom")) applyZoom(section, zoom); // the right dpi at once
  const image = imageIn(section);
  if (image) {
    try {
      await image.decode(); // drawn before it is shown: no blank page between the two
    } catch {
      // a broken image shows as one, as on a full load
    }
  }
  return section;
}

// Show the page at `url` (this document's viewer) in place. `push`: a new history entry (not
// when going back or forward); `focus`: a selector for what takes the focus in the new section.
async function turn(url, { push = true, focus = "" } = {}) {
  const key = address(url);
  if (key === shown) return;
  const mine = ++latest;
  const section = kept.get(key) ?? (await fetchSection(url));
  if (mine !== latest) return; // a later turn won
  if (!section) {
    window.location.assign(new URL(url, window.location.href).href); // as the link would
    return;
  }
  const old = viewer();
  if (!old) return;
  keep(shown, old);
  keep(key, section);
  old.replaceWith(section);
  shown = key;
  if (push) {
    const at = new URL(url, window.location.href);
    window.history.pushState({ viewer: key }, "", at.pathname + at.search + at.hash);
  }
  start(section);
  const heading = section.querySelector(".doc-page__head h3");
  const announce = document.getElementById("viewer-turned");
  if (announce && heading) announce.textContent = `${heading.textContent.trim()} shown`;
  if (focus) (section.querySelector(focus) || heading)?.focus();
  if (section.getBoundingClientRect().top < 0) section.scrollIntoView({ block: "start" });
}

// Follow a link of the viewer: a turn in place for a page of this document, a load otherwise.
function follow(link, focus = "") {
  if (thisDocument(link.href)) turn(link.href, { focus });
  else window.location.assign(link.href);
}

function followKey(name) {
  const link = viewer()?.querySelector(`a[data-key="${name}"]`);
  if (link) follow(link);
}

function focusFor(element) {
  // What takes the focus after a turn a click or the page box made, where it had the focus.
  if (!viewer()?.contains(document.activeElement)) return "";
  if (element.dataset.thumb) return `a[data-thumb="${element.dataset.thumb}"]`;
  if (element.dataset.key === "stamped" || element.dataset.key === "original") return 'a[data-key][aria-current]';
  if (element.dataset.key) return `[data-key="${element.dataset.key}"]`;
  return "#viewer-page";
}

function typing(target) {
  return target instanceof HTMLElement &&
    (target.isContentEditable || ["INPUT", "TEXTAREA", "SELECT", "BUTTON"].includes(target.tagName));
}

function onKey(event) {
  if (event.defaultPrevented || event.ctrlKey || event.metaKey || event.altKey) return;
  if (typing(event.target) || !viewer()) return;
  // Arrows and PageUp/PageDown scroll the page text when it has the focus.
  const inText = event.target instanceof HTMLElement && event.target.closest(".page-text");
  const actions = {
    j: () => followKey("next-page"),
    k: () => followKey("previous-page"),
    n: () => followKey("next-document"),
    p: () => followKey("previous-document"),
    s: () => followKey(viewer().querySelector('a[data-key="stamped"][aria-current]') ? "original" : "stamped"),
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

function onClick(event) {
  if (event.defaultPrevented || event.button !== 0) return;
  const target = event.target instanceof Element ? event.target : null;
  const zoom = target?.closest("[data-viewer] button[data-zoom]");
  if (zoom) {
    setZoom(zoom.dataset.zoom);
    return;
  }
  if (event.ctrlKey || event.metaKey || event.shiftKey || event.altKey) return; // a new tab or window
  const link = target?.closest("[data-viewer] a[href]");
  if (!link || link.target || link.hasAttribute("download") || !thisDocument(link.href)) return;
  event.preventDefault();
  follow(link, focusFor(link));
}

function onSubmit(event) {
  const form = event.target instanceof HTMLFormElement ? event.target.closest("[data-viewer] .viewer-goto") : null;
  if (!form || event.defaultPrevented) return;
  const url = new URL(form.action, window.location.href);
  url.search = new URLSearchParams(new FormData(form)).toString();
  if (!thisDocument(url.href)) return;
  event.preventDefault();
  turn(url.href, { focus: focusFor(form) });
}

function onHistory() {
  // Back or forward to an entry of this document's pages: shown in place, no entry added.
  if (viewer() && thisDocument(window.location.href)) turn(window.location.href, { push: false });
}

const first = viewer();
if (first) {
  shown = address(window.location.href);
  document.addEventListener("keydown", onKey);
  document.addEventListener("click", onClick);
  document.addEventListener("submit", onSubmit);
  window.addEventListener("popstate", onHistory);
  start(first);
}
