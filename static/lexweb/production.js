// Productions: the new production's order (drag, or Up/Down/Remove without a round trip) and a
// live stamp preview; a production's stamping and export progress from the case stream.
// Every page works without this file (the buttons post the form; the page shows the state).
import { onCaseEvent, redraw } from "./app.js";

const PREVIEW_FIELDS = [
  "bates_prefix", "start_number", "digits", "position", "legend", "legend_position", "font_size", "margin",
];
const PREVIEW_DELAY_MS = 500;
const TERMINAL = new Set(["ready", "failed"]);
const STAMPING = { queued: "Queued", processing: "Stamping", ready: "Ready", failed: "Failed" };
const BUILDING = { ...STAMPING, processing: "Building" };

// --- The new production -------------------------------------------------------------------

function setupNew(root) {
  const form = root.querySelector("#production-form");
  const body = root.querySelector("[data-picked]");
  const image = root.querySelector("[data-preview-image]");
  const caption = root.querySelector("[data-preview-caption]");
  if (!form) return;
  let timer = 0;
  let dragged = null;

  function rows() {
    return body ? [...body.querySelectorAll("tr[data-document-id]")] : [];
  }

  function renumber() {
    const order = form.querySelector("[data-order]");
    if (order) order.value = rows().map((row) => row.dataset.documentId).join(",");
    let pages = 0;
    rows().forEach((row, n) => {
      row.querySelector("[data-position]").textContent = String(n + 1);
      pages += Number(row.dataset.pages) || 0;
    });
    const count = root.querySelector("[data-picked-count]");
    const total = root.querySelector("[data-picked-pages]");
    if (count) count.textContent = String(rows().length);
    if (total) total.textContent = String(pages);
    schedulePreview();
  }

  function previewUrl() {
    const first = rows()[0];
    const prefix = form.elements.namedItem("bates_prefix");
    if (!first || !prefix || !prefix.value.trim()) return "";
    const query = new URLSearchParams();
    for (const name of PREVIEW_FIELDS) {
      const field = form.elements.namedItem(name);
      if (field && field.value !== "") query.set(name, field.value);
    }
    const base = root.dataset.previewBase.replace(/\/0\.png$/, `/${Number(first.dataset.documentId)}.png`);
    return `${base}?${query}`;
  }

  function schedulePreview() {
    clearTimeout(timer);
    timer = setTimeout(showPreview, PREVIEW_DELAY_MS);
  }

  function showPreview() {
    const url = previewUrl();
    if (!image || !url || image.getAttribute("src") === url) return;
    caption.textContent = "Drawing the preview…";
    image.src = url;
  }

  // The page drawn after a Preview press names page 1's number; a preview drawn here does not.
  const drawnSrc = image?.src;
  image?.addEventListener("load", () => {
    image.hidden = false;
    if (image.src !== drawnSrc) {
      caption.textContent = "Page 1 of the first document, stamped as it will be.";
    }
  });
  image?.addEventListener("error", async () => {
    image.hidden = true;
    // The preview answers a refusal as text (400): say why.
    try {
      const response = await fetch(image.src, { credentials: "same-origin" });
      caption.textContent = response.ok ? "The preview could not be shown." : await response.text();
    } catch {
      caption.textContent = "The preview could not be reached; press Preview to try again.";
    }
  });

  // Enter in the search box adds what it finds (the form's default button previews).
  form.querySelector("#pick-q")?.addEventListener("keydown", (event) => {
    if (event.key !== "Enter") return;
    event.preventDefault();
    form.querySelector('button[name="op"][value="add"]')?.click();
  });

  form.addEventListener("input", (event) => {
    if (PREVIEW_FIELDS.includes(event.target.name)) schedulePreview();
  });

  // Up, Down and Remove move the row here instead of posting the form.
  form.addEventListener("click", (event) => {
    const button = event.target.closest("button[data-move]");
    if (!button) return;
    const row = button.closest("tr");
    event.preventDefault();
    const move = button.dataset.move;
    if (move === "up" && row.previousElementSibling) row.after(row.previousElementSibling);
    else if (move === "down" && row.nextElementSibling) row.before(row.nextElementSibling);
    else if (move === "remove") {
      const next = row.nextElementSibling || row.previousElementSibling;
      row.remove();
      next?.querySelector(`button[data-move="${move}"]`)?.focus();
      renumber();
      return;
    }
    button.focus();
    renumber();
  });

  body?.addEventListener("dragstart", (event) => {
    dragged = event.target.closest("tr");
    if (!dragged) return;
    dragged.classList.add("picked--dragging");
    event.dataTransfer.effectAllowed = "move";
    event.dataTransfer.setData("text/plain", dragged.dataset.documentId);
  });
  body?.addEventListener("dragover", (event) => {
    const over = event.target.closest("tr");
    if (!dragged || !over || over === dragged) return;
    event.preventDefault();
    const box = over.getBoundingClientRect();
    if (event.clientY < box.top + box.height / 2) over.before(dragged);
    else over.after(dragged);
  });
  body?.addEventListener("drop", (event) => event.preventDefault());
  body?.addEventListener("dragend", () => {
    dragged?.classList.remove("picked--dragging");
    dragged = null;
    renumber();
  });

  if (image && !image.getAttribute("src")) schedulePreview();
}

// --- A production and the list: live progress --------------------------------------------

function setupDetail(root) {
  const id = Number(root.dataset.production);
  const status = root.querySelector("[data-production-status]");
  const progress = root.querySelector("[data-production-progress]");
  const pages = root.querySelector("[data-production-pages]");
  const error = root.querySelector("[data-production-error]");
  const shown = root.dataset.status;
  const exportsShown = new Map(
    [...root.querySelectorAll("[data-export-id]")].map((li) => [Number(li.dataset.exportId), li]),
  );

  function show(state) {
    if (status) {
      status.textContent = STAMPING[state.status] || state.status;
      status.className = `badge doc-status-${state.status}`;
    }
    if (progress) progress.value = state.pages_done;
    if (pages) pages.textContent = String(state.pages_done);
    if (error) {
      error.textContent = state.error || "";
      error.hidden = !state.error;
    }
    // Finished (or failed) since the page was drawn: draw it again, with its downloads.
    if (TERMINAL.has(state.status) && state.status !== shown) redraw();
  }

  onCaseEvent("documents.production_progress", (event) => {
    if (event.production_id === id) show(event);
  });
  onCaseEvent("documents.export_progress", (event) => {
    if (event.production_id !== id) return;
    const li = exportsShown.get(event.export_id);
    if (!li) return redraw();
    li.querySelector("[data-export-status]").textContent = BUILDING[event.status] || event.status;
    if (TERMINAL.has(event.status) && li.dataset.status !== event.status) redraw();
  });
  // Events sent before the socket first opened (or missed, when the stream could not send them
  // all after a drop) are not on the page: read the row.
  onCaseEvent("stream.open", async (event) => {
    if (event.caughtUp) return;
    const unfinished = [...exportsShown.values()].some((li) => !TERMINAL.has(li.dataset.status));
    if (TERMINAL.has(shown) && !unfinished) return;
    try {
      const response = await fetch(root.dataset.productionApi, { credentials: "same-origin" });
      if (!response.ok) return;
      const state = await response.json();
      if (state.status !== shown && TERMINAL.has(state.status)) return redraw();
      if (!TERMINAL.has(state.status)) show(state);
      if (unfinished && TERMINAL.has(state.status)) await checkExports();
    } catch {
      // The stream's next event or a reload brings the state.
    }
  });

  async function checkExports() {
    for (const [exportId, li] of exportsShown) {
      if (TERMINAL.has(li.dataset.status)) continue;
      const response = await fetch(`${root.dataset.productionApi}/exports/${exportId}`, {
        credentials: "same-origin",
      });
      if (response.ok && TERMINAL.has((await response.json()).status)) return redraw();
    }
  }
}

function setupList(root) {
  onCaseEvent("documents.production_progress", (event) => {
    const row = root.querySelector(`tr[data-production-id="${Number(event.production_id)}"]`);
    if (!row) return;
    const badge = row.querySelector('[data-field="status"]');
    badge.textContent = STAMPING[event.status] || event.status;
    badge.className = `badge doc-status-${event.status}`;
    row.querySelector('[data-field="pages"]').textContent =
      `${event.pages_done} of ${event.page_count} pages`;
  });
}

const newRoot = document.querySelector("[data-production-new]");
if (newRoot) setupNew(newRoot);
const detailRoot = document.querySelector("[data-production]");
if (detailRoot) setupDetail(detailRoot);
const listRoot = document.querySelector("[data-production-list]");
if (listRoot) setupList(listRoot);
