// lexweb — small progressive enhancements. Every page works without this file.

import { serverHtml } from "./server_html.js";

// (a) Ask before destructive submits: <button data-confirm="…"> or <form data-confirm="…">.
document.addEventListener("submit", (event) => {
  const form = event.target;
  const button = event.submitter;
  const question = (button && button.dataset.confirm) || form.dataset.confirm;
  if (question && !window.confirm(question)) event.preventDefault();
});

// (a2) <form data-submit-in-place="…">: post without leaving the page, so the live stream stays
// connected and hears the answer. Without JS the form posts and redirects as usual.
document.addEventListener("submit", async (event) => {
  const form = event.target;
  if (event.defaultPrevented || !form.dataset.submitInPlace) return;
  event.preventDefault();
  try {
    const response = await fetch(form.action, {
      method: "POST",
      body: new FormData(form),
      headers: { Accept: "application/json" },
      credentials: "same-origin",
    });
    if (!response.ok) throw new Error(String(response.status));
    toast("info", form.dataset.submitInPlace);
  } catch {
    toast("warning", "That did not go through; reload the page and try again.");
  }
});

// (b) <button data-copy="#selector"> copies the target's text.
document.addEventListener("click", async (event) => {
  const button = event.target.closest("[data-copy]");
  if (!button) return;
  const target = document.querySelector(button.dataset.copy);
  if (!target) return;
  const label = button.dataset.label || button.textContent;
  button.dataset.label = label;
  try {
    await navigator.clipboard.writeText(target.textContent.trim());
    button.textContent = "Copied";
  } catch {
    // No clipboard access (insecure context, denied): select the text so Ctrl+C works.
    const range = document.createRange();
    range.selectNodeContents(target);
    const selection = window.getSelection();
    selection.removeAllRanges();
    selection.addRange(range);
    button.textContent = "Press Ctrl+C to copy";
  }
  setTimeout(() => { button.textContent = label; }, 3000);
});

// (c) A case page's live stream: reconnect with backoff; pages subscribe to event types.
const TOAST_MS = 12000;
const LEVELS = new Set(["info", "success", "warning"]);
const caseEventHandlers = new Map();

// Call `handler(event)` for every event of `type` ("documents.progress", …) on the page's case
// stream, each once and in the order of its number in the case's feed. The pseudo-type
// "stream.open" fires on every (re)connect, once the events missed while no socket listened were
// applied: `caughtUp` is true when they all were (a reconnect), false on the first connect (what
// happened between the page's drawing and the socket's opening is unknown) or when the server
// could not send them all: then a page reads its state again (the database row is the truth).
export function onCaseEvent(type, handler) {
  if (!caseEventHandlers.has(type)) caseEventHandlers.set(type, new Set());
  caseEventHandlers.get(type).add(handler);
}

// A navigation under way (a form posted, a link followed) is aborted by a reload: a live event
// that arrives meanwhile (the export the posted form just queued, say) must not redraw the page
// it is leaving. Past a few seconds the page is still here (a download, a cancelled leave).
const LEAVING_MS = 5000;
let leavingUntil = 0;
addEventListener("beforeunload", () => {
  leavingUntil = Date.now() + LEAVING_MS;
});

// Draw the page again from the server (its state changed), unless it is being left.
export function redraw() {
  if (Date.now() < leavingUntil) return;
  location.reload();
}

function emitCaseEvent(event) {
  for (const handler of caseEventHandlers.get(event.type) || []) {
    try {
      handler(event);
    } catch (error) {
      console.error(error);
    }
  }
}

function toast(level, text) {
  const region = document.getElementById("live-notices");
  if (!region) return;
  const div = document.createElement("div");
  div.className = `toast toast-${LEVELS.has(level) ? level : "info"}`;
  div.textContent = text;
  region.append(div);
  setTimeout(() => div.remove(), TOAST_MS);
}

onCaseEvent("cases.notice", (event) => {
  if (typeof event.message === "string") toast(event.level, event.message);
});

// The socket opens at `?after=latest`, and after a drop at `?after=<the last number applied>`:
// the server sends the stored events missed in between, then "stream.caught_up", then live ones,
// each number once and in order (apps/cases/consumers.py).
function connectCaseStream(root) {
  const path = root.dataset.caseStream;
  const state = document.getElementById("live-state");
  const say = (text) => { if (state) state.textContent = text; };
  let delay = 1000;
  let opened = false;
  let last = null; // the feed number applied last (null until the first socket says where)

  function open() {
    const scheme = location.protocol === "https:" ? "wss://" : "ws://";
    const after = last === null ? "latest" : String(last);
    const socket = new WebSocket(`${scheme}${location.host}${path}?after=${after}`);

    socket.addEventListener("open", () => {
      delay = 1000;
      say("live");
    });

    socket.addEventListener("message", (event) => {
      let data;
      try {
        data = JSON.parse(event.data);
      } catch {
        return;
      }
      if (!data || typeof data.type !== "string" || data.type === "stream.open") return;
      if (data.type === "stream.caught_up") {
        if (Number.isInteger(data.seq)) last = data.seq;
        const caughtUp = opened && data.complete === true;
        emitCaseEvent({ type: "stream.open", reconnected: opened, caughtUp });
        opened = true;
        return;
      }
      if (Number.isInteger(data.seq)) {
        if (last !== null && data.seq <= last) return; // the server sends none twice; be sure
        last = data.seq;
      }
      emitCaseEvent(data);
    });

    socket.addEventListener("close", (event) => {
      if (event.code === 4404) {
        say("not available");
        return;
      }
      if (event.code === 4403) {
        say("your access to this case was removed");
        setTimeout(() => location.reload(), 2000);
        return;
      }
      say("reconnecting…");
      setTimeout(open, delay);
      delay = Math.min(delay * 2, 30000);
    });
  }

  open();
}

// (d) Documents page: rows follow ingest live; with JS each file uploads on its own request to
// the API with its own progress bar. Without JS the form posts to the page as usual.
// A row's progress (pages read, status) is applied from the event at once; whenever a row is new
// or its state changed, the server renders it again (documents/_document_row.html, the same
// template as the page's own rows) with the list's count line, and the page puts them in place.
const MAX_PARALLEL_UPLOADS = 3;
const ROWS_AGAIN_MS = 250;
const ROWS_AGAIN_MAX = 200;

function setupDocuments(root) {
  const labelsNode = document.getElementById("document-labels");
  const labels = labelsNode ? JSON.parse(labelsNode.textContent) : {};
  const label = (group, value) => (labels[group] && labels[group][value]) || value;
  const tbody = document.getElementById("document-rows");
  // New documents go on top of the newest-first list: only its first page shows them.
  const firstPage = root.hasAttribute("data-documents-first-page");
  const rowsUrl = root.dataset.documentsRows;
  if (!tbody) return;

  function findRow(id) {
    return tbody.querySelector(`tr[data-document-id="${Number(id)}"]`);
  }

  function shownIds() {
    return [...tbody.rows].map((row) => Number(row.dataset.documentId)).filter(Number.isInteger);
  }

  // --- Rows read again from the server, batched ---
  const again = new Set(); // ids of rows to read again
  let newer = false; // also the rows added since the newest shown (first page only)
  let timer = null;
  let reading = false;

  function readSoon(ids, withNewer) {
    for (const id of ids) if (Number.isInteger(id)) again.add(id);
    if (withNewer) newer = true;
    if (!timer && !reading) timer = setTimeout(readRows, ROWS_AGAIN_MS);
  }

  // Put a row the server rendered in place of the shown one; a row not shown yet goes, on the
  // newest-first first page, above the first row of a lower id (older), and on any other view
  // at the end, until the page's order (below) puts it where a reload would.
  function place(fresh) {
    const id = Number(fresh.dataset.documentId);
    const old = findRow(id);
    if (old) {
      const ticked = old.querySelector('input[name="ids"]')?.checked;
      if (ticked) fresh.querySelector('input[name="ids"]')?.setAttribute("checked", "");
      old.replaceWith(fresh);
      return;
    }
    if (!firstPage) {
      tbody.append(fresh);
      return;
    }
    const older = [...tbody.rows].find((r) => Number(r.dataset.documentId) < id);
    tbody.insertBefore(fresh, older || null);
  }

  // A view of another sort, filter or page: the rows as a reload would show them now, in that
  // order; a row no longer on the page (moved past its end by a new one, or out of the list)
  // goes.
  function arrange(order) {
    const ids = order ? order.split(",").map(Number) : [];
    const keep = new Set(ids);
    for (const row of [...tbody.rows]) {
      if (!keep.has(Number(row.dataset.documentId))) row.remove();
    }
    for (const id of ids) {
      const row = findRow(id);
      if (row) tbody.append(row);
    }
  }

  async function readRows() {
    timer = null;
    if (!rowsUrl) return;
    reading = true;
    const ids = [...again].slice(0, ROWS_AGAIN_MAX);
    for (const id of ids) again.delete(id);
    const withNewer = newer && firstPage;
    newer = false;
    const params = new URLSearchParams();
    params.set("ids", ids.join(","));
    const shown = shownIds();
    if (withNewer) params.set("newer_than", String(shown.length ? Math.max(...shown) : 0));
    if (!firstPage) {
      params.set("order", "1");
      params.set("shown", shown.join(","));
    }
    const joiner = rowsUrl.includes("?") ? "&" : "?";
    try {
      const holder = await serverHtml(`${rowsUrl}${joiner}${params}`);
      if (!holder) return;
      const count = holder.querySelector("#list-count");
      const current = document.getElementById("list-count");
      if (count && current) current.replaceWith(count);
      const returned = new Set();
      for (const fresh of [...holder.querySelectorAll("#rows-again > tr")]) {
        returned.add(Number(fresh.dataset.documentId));
        place(fresh);
      }
      // Asked for and not returned: it left the list (withdrawn, or no longer matching).
      for (const id of ids) if (!returned.has(id)) findRow(id)?.remove();
      for (const fresh of holder.querySelectorAll("#rows-newer > tr")) place(fresh);
      const order = holder.querySelector("#page-order");
      if (order) arrange(order.dataset.order);
      document.getElementById("documents-empty")?.toggleAttribute("hidden", tbody.rows.length > 0);
      document.dispatchEvent(new CustomEvent("documents:rows-changed"));
    } catch {
      // The rows keep what they show; the next event or a reload brings them up to date.
    } finally {
      reading = false;
      if ((again.size || newer) && !timer) timer = setTimeout(readRows, ROWS_AGAIN_MS);
    }
  }

  // --- What an event changes at once ---
  function fill(row, doc) {
    const field = (name) => row.querySelector(`[data-field="${name}"]`);
    const bar = row.querySelector(".doc-progress progress");
    if (typeof doc.status === "string") {
      const badge = field("status");
      badge.className = `badge doc-status-${doc.status.replace(/[^a-z_]/g, "")}`;
      badge.textContent = label("status", doc.status);
      row.querySelector(".doc-progress").hidden = doc.status === "ready" || doc.status === "failed";
    }
    if (Number.isInteger(doc.page_count) && Number.isInteger(doc.pages_done)) {
      bar.max = Math.max(doc.page_count, 1);
      bar.value = doc.pages_done;
      bar.textContent = `${doc.pages_done} of ${doc.page_count}`;
      const plural = doc.page_count === 1 ? "" : "s";
      field("pages").textContent = `${doc.pages_done} of ${doc.page_count} page${plural}`;
    }
    if (typeof doc.error === "string") {
      field("error").textContent = doc.error;
      field("error").hidden = !doc.error;
    }
  }

  // What a row shows that only the server renders in full (kind, size, badges, the verdict…)
  // changes with these: a change of one reads the row again.
  function changed(row, doc) {
    const status = row.querySelector('[data-field="status"]');
    const verdict = row.querySelector('[data-field="provenance"]');
    const statusNow = [...(status?.classList || [])].find((c) => c.startsWith("doc-status-"));
    return (
      (typeof doc.status === "string" && statusNow !== `doc-status-${doc.status}`) ||
      (typeof doc.provenance === "string" && verdict?.dataset.provenance !== doc.provenance) ||
      (Number.isInteger(doc.page_count) &&
        row.querySelector('[data-field="page_count"]')?.textContent.trim() !== String(doc.page_count))
    );
  }

  onCaseEvent("documents.progress", (event) => {
    const id = Number(event.document_id);
    const row = findRow(id);
    if (!row) {
      // Not shown: a new document (on top of the first page; on another view where its page
      // has it) and, anywhere, the count. Asked for by its id too: a read already under way
      // may bring its row as it was before this event, and the next read must bring it again
      // (a row the page's order does not hold is not kept).
      readSoon([id], true);
      return;
    }
    const stale = changed(row, event);
    fill(row, event);
    if (stale) readSoon([id], false);
  });

  // After connecting, unless the feed's missed events were applied: read the rows again.
  onCaseEvent("stream.open", (event) => {
    if (!event.caughtUp) readSoon(shownIds(), true);
  });

  const form = root.querySelector("form[data-upload-api]");
  if (form) {
    setupUploads(form, (doc) => {
      if (!doc || !Number.isInteger(doc.id)) return;
      readSoon(findRow(doc.id) ? [doc.id] : [], true);
    });
  }
}

function setupUploads(form, onDocument) {
  const input = form.querySelector('input[type="file"]');
  const origin = form.querySelector('select[name="origin"]');
  const custodianInput = form.querySelector('input[name="custodian"]');
  const zone = form.querySelector("[data-dropzone]");
  const list = document.getElementById("upload-progress");
  const token = form.querySelector('[name="csrfmiddlewaretoken"]')?.value || "";
  const documentsUrl = form.closest("[data-documents]")?.dataset.documents || "";
  if (!input || !origin || !zone || !list) return;
  const queue = [];
  let active = 0;

  zone.classList.add("dropzone--enhanced");
  const hint = zone.querySelector(".dropzone__hint");
  if (hint) hint.hidden = false;

  function itemFor(file) {
    const li = document.createElement("li");
    li.className = "upload-item";
    const name = document.createElement("span");
    name.className = "upload-item__name";
    name.textContent = file.name;
    const bar = document.createElement("progress");
    bar.max = Math.max(file.size, 1);
    bar.value = 0;
    bar.setAttribute("aria-label", `Upload of ${file.name}`);
    const result = document.createElement("span");
    result.className = "upload-item__result";
    result.textContent = "Waiting…";
    li.append(name, bar, result);
    list.append(li);
    return { li, bar, result };
  }

  function finish(item, status, text, doc, notes) {
    item.li.classList.add(`upload-item--${status}`);
    item.bar.hidden = true;
    item.result.textContent = text;
    if (doc && Number.isInteger(doc.id) && documentsUrl) {
      const link = document.createElement("a");
      link.href = `${documentsUrl}${doc.id}/`;
      link.textContent = status === "duplicate" ? doc.filename : "open";
      item.result.append(status === "duplicate" ? " as " : " — ", link);
    }
    for (const note of notes || []) {
      const span = document.createElement("span");
      span.className = "upload-item__note small";
      span.textContent = note;
      item.li.append(span);
    }
  }

  function report(item, status, body) {
    const result = body && Array.isArray(body.results) ? body.results[0] : null;
    if (!result) {
      const why = (body && typeof body.detail === "string" && body.detail) || `the server answered ${status}`;
      finish(item, "error", `Not added: ${why}`);
    } else if (result.status === "created") {
      finish(item, "created", "Added", result.document, result.notes);
      onDocument(result.document);
    } else if (result.status === "duplicate") {
      finish(item, "duplicate", "Already in this case", result.document, result.notes);
    } else {
      finish(item, "error", `Not added: ${result.error || "unknown error"}`, null, result.notes);
    }
  }

  function send(job) {
    return new Promise((resolve) => {
      const xhr = new XMLHttpRequest();
      xhr.open("POST", form.dataset.uploadApi);
      xhr.setRequestHeader("X-CSRFToken", token);
      xhr.setRequestHeader("Accept", "application/json");
      xhr.responseType = "json";
      xhr.upload.addEventListener("progress", (event) => {
        if (!event.lengthComputable) return;
        job.item.bar.max = Math.max(event.total, 1);
        job.item.bar.value = event.loaded;
      });
      xhr.addEventListener("load", () => { report(job.item, xhr.status, xhr.response); resolve(); });
      xhr.addEventListener("error", () => {
        finish(job.item, "error", "Not added: the connection failed. Try this file again.");
        resolve();
      });
      const body = new FormData();
      body.append("files", job.file, job.file.name);
      body.append("origin", job.origin);
      body.append("custodian", job.custodian);
      job.item.result.textContent = "Uploading…";
      xhr.send(body);
    });
  }

  function pump() {
    while (active < MAX_PARALLEL_UPLOADS && queue.length) {
      active += 1;
      send(queue.shift()).then(() => {
        active -= 1;
        pump();
      });
    }
  }

  function start(files) {
    // The custodian as typed when the files were chosen, like the origin.
    const custodian = custodianInput ? custodianInput.value : "";
    for (const file of files) queue.push({ file, origin: origin.value, custodian, item: itemFor(file) });
    pump();
  }

  function takeChosen() {
    const files = [...input.files];
    input.value = "";
    if (files.length) start(files);
    return files.length;
  }

  input.addEventListener("change", takeChosen);
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    if (!takeChosen()) input.focus();
  });
  zone.addEventListener("dragover", (event) => {
    event.preventDefault();
    zone.classList.add("dropzone--over");
  });
  zone.addEventListener("dragleave", (event) => {
    if (!zone.contains(event.relatedTarget)) zone.classList.remove("dropzone--over");
  });
  zone.addEventListener("drop", (event) => {
    event.preventDefault();
    zone.classList.remove("dropzone--over");
    if (event.dataTransfer && event.dataTransfer.files.length) start([...event.dataTransfer.files]);
  });
  // A file dropped next to the zone would otherwise make the browser leave the page to show it.
  for (const type of ["dragover", "drop"]) {
    window.addEventListener(type, (event) => {
      if (!zone.contains(event.target)) event.preventDefault();
    });
  }
}

const documentsRoot = document.querySelector("[data-documents]");
if (documentsRoot) setupDocuments(documentsRoot);

const streamRoot = document.querySelector("[data-case-stream]");
if (streamRoot) connectCaseStream(streamRoot);

// (f) A table wider than its frame scrolls sideways: the keyboard must be able to reach and
// scroll it too, so such a frame takes the focus, as a region named after its table. A frame
// that fits again (a wider window, live rows that got shorter) leaves the tab order.
function keyboardScrollable(wrap) {
  const scrolls = wrap.scrollWidth > wrap.clientWidth + 1;
  if (scrolls && !wrap.hasAttribute("tabindex")) {
    wrap.tabIndex = 0;
    wrap.dataset.scrollFocus = "";
    if (!wrap.hasAttribute("role")) {
      const caption = wrap.querySelector("caption")?.textContent.trim();
      const heading = wrap.closest("section[aria-labelledby]")?.getAttribute("aria-labelledby");
      wrap.setAttribute("role", "region");
      if (caption) wrap.setAttribute("aria-label", caption);
      else if (heading) wrap.setAttribute("aria-labelledby", heading);
      else wrap.setAttribute("aria-label", "Table (scrolls sideways)");
    }
  } else if (!scrolls && "scrollFocus" in wrap.dataset) {
    for (const name of ["tabindex", "role", "aria-label", "aria-labelledby", "data-scroll-focus"]) {
      wrap.removeAttribute(name);
    }
  }
}

const tableFrames = new ResizeObserver((entries) => {
  for (const entry of entries) {
    const wrap = entry.target.closest(".table-wrap");
    if (wrap) keyboardScrollable(wrap);
  }
});
function watchTableFrame(wrap) {
  keyboardScrollable(wrap);
  tableFrames.observe(wrap);
  const table = wrap.querySelector("table");
  if (table) tableFrames.observe(table);
}
for (const wrap of document.querySelectorAll(".table-wrap")) watchTableFrame(wrap);
// Frames added later too: a live page (the cluster dashboard) swaps in a fresh copy of its
// content, whose frames were never measured.
new MutationObserver((records) => {
  for (const record of records) {
    for (const node of record.addedNodes) {
      if (!(node instanceof Element)) continue;
      if (node.matches(".table-wrap")) watchTableFrame(node);
      for (const wrap of node.querySelectorAll(".table-wrap")) watchTableFrame(wrap);
    }
  }
}).observe(document.body, { childList: true, subtree: true });
