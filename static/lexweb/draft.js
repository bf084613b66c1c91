// lexweb — the draft pages. Every page works without this file: claims and findings are links
// (?finding=…) that render the panel, filters are a GET form, and a reload shows progress.
// With it: the finding panel opens in place, filters apply as they are ticked, and verification
// progress follows the case's live stream (the page reloads itself once a run has finished:
// the database row is the truth).

import { onCaseEvent, redraw } from "./app.js";
import { serverHtml } from "./server_html.js";

const FINISHED = new Set(["done", "failed"]);

function setupVersion(root) {
  const draftId = Number(root.dataset.draft);
  const number = Number(root.dataset.version);
  let status = root.dataset.verification || "";
  const ours = (event) => event.draft_id === draftId && event.version === number;

  // (a) Progress of this version's verification; a finished run reloads the page.
  function progress(event) {
    if (typeof event.status !== "string") return;
    if (FINISHED.has(event.status)) {
      if (status !== event.status) redraw();
      return;
    }
    status = event.status;
    const text = root.querySelector('[data-field="progress-text"]');
    const bar = root.querySelector("#verification-state progress");
    if (!Number.isInteger(event.claims_done) || !Number.isInteger(event.claim_count)) return;
    if (text) {
      const label = event.status === "running" ? "Running" : "Queued";
      text.textContent = event.claim_count
        ? `${label}: ${event.claims_done} of ${event.claim_count} claims`
        : label;
    }
    if (bar) {
      bar.max = Math.max(event.claim_count, 1);
      bar.value = event.claims_done;
      bar.textContent = `${event.claims_done} of ${event.claim_count}`;
    }
  }

  onCaseEvent("verification.progress", (event) => { if (ours(event)) progress(event); });

  // Unless the stream could send the events missed while no socket listened: ask for the state.
  onCaseEvent("stream.open", async (event) => {
    if (event.caughtUp || (status !== "queued" && status !== "running")) return;
    try {
      const response = await fetch(root.dataset.findingsApi, {
        credentials: "same-origin",
        headers: { Accept: "application/json" },
      });
      if (!response.ok) return;
      const body = await response.json();
      const run = body && body.verification;
      if (run) progress({ ...run, draft_id: draftId, version: number });
    } catch {
      // The next event, or a reload, brings the page up to date.
    }
  });

  // (b) The finding panel opens in place: the server renders it (?panel=1), as it does for the
  // link without JS, so there is one way to show a finding.
  const panelBox = root.querySelector(".version-grid__panel");
  async function openFinding(link) {
    const url = new URL(link.href);
    const fragment = new URL(url);
    fragment.searchParams.set("panel", "1");
    fragment.hash = "";
    const holder = await serverHtml(fragment);
    if (!holder) throw new Error("the panel was not answered");
    const panel = holder.querySelector("#finding-panel");
    if (!panel || !panelBox) throw new Error("no panel");
    panelBox.replaceChildren(panel);
    for (const claim of root.querySelectorAll(".claim--selected")) claim.classList.remove("claim--selected");
    const id = link.dataset.finding;
    for (const claim of root.querySelectorAll(`#draft-text .claim[data-finding="${CSS.escape(id)}"]`)) {
      claim.classList.add("claim--selected");
    }
    url.hash = "finding-panel";
    history.replaceState(null, "", url);
    panel.focus({ preventScroll: window.matchMedia("(min-width: 56rem)").matches });
  }

  root.addEventListener("click", (event) => {
    const link = event.target.closest("a[data-finding]");
    if (!link || event.defaultPrevented || event.button !== 0) return;
    if (event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
    event.preventDefault();
    openFinding(link).catch(() => { location.href = link.href; });
  });

  // (c) Filters apply as they are ticked (the form's own button stays for keyboards).
  const filters = root.querySelector("#claim-filters");
  if (filters) filters.addEventListener("change", () => filters.requestSubmit());
}

// The reviewer's points (templates/drafting/_margin_notes.html): with the margin beside the
// text, each note is set level with the words it attacks (pushed down when the one above it is
// long); a click on a note, or focus on it, marks its words and brings them into view; a click
// on marked words marks their note. Without this file the notes are a list whose links jump to
// the words.
const BESIDE = window.matchMedia("(min-width: 56rem)"); // drafts.css: the margin from 56rem

function setupNotes(root) {
  const aside = root.querySelector("[data-margin-notes]");
  const list = aside && aside.querySelector("[data-margin-list]");
  const text = root.querySelector("#draft-text");
  if (!list || !text) return;
  const notes = [...list.querySelectorAll("li[data-note]")];

  function place() {
    const beside = BESIDE.matches && aside.offsetLeft > text.offsetLeft;
    list.classList.toggle("margin-notes__list--placed", beside);
    if (!beside) {
      for (const note of notes) note.style.top = "";
      list.style.height = "";
      return;
    }
    const origin = list.getBoundingClientRect().top;
    let bottom = 0;
    for (const note of notes) {
      const start = text.querySelector(`#note-at-${note.dataset.note}`);
      const wanted = start ? start.getBoundingClientRect().top - origin : bottom;
      const top = Math.max(wanted, bottom);
      note.style.top = `${top}px`;
      bottom = top + note.offsetHeight + 8;
    }
    list.style.height = `${bottom}px`;
  }

  function mark(number, scroll) {
    for (const span of text.querySelectorAll(".note-span--active")) span.classList.remove("note-span--active");
    for (const note of aside.querySelectorAll(".margin-note--active")) note.classList.remove("margin-note--active");
    const spans = text.querySelectorAll(`.note-span[data-notes~="${CSS.escape(number)}"]`);
    for (const span of spans) span.classList.add("note-span--active");
    const note = list.querySelector(`li[data-note="${CSS.escape(number)}"]`);
    if (note) note.classList.add("margin-note--active");
    if (scroll && spans.length) spans[0].scrollIntoView({ block: "nearest" });
  }

  list.addEventListener("click", (event) => {
    const link = event.target.closest("a[data-note]");
    if (!link || event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
    event.preventDefault();
    mark(link.dataset.note, true);
    history.replaceState(null, "", `#note-${link.dataset.note}`);
  });
  list.addEventListener("focusin", (event) => {
    const link = event.target.closest("a[data-note]");
    if (link) mark(link.dataset.note, true);
  });
  text.addEventListener("click", (event) => {
    const span = event.target.closest(".note-span");
    if (span) mark(span.dataset.notes.split(" ")[0], false);
  });

  place();
  const again = () => window.requestAnimationFrame(place);
  if (window.ResizeObserver) new ResizeObserver(again).observe(text);
  BESIDE.addEventListener("change", again);
  if (document.fonts) document.fonts.ready.then(again);
  const wanted = /^#note-(\d+)$/.exec(location.hash);
  if (wanted) mark(wanted[1], true);
}

// The draft page: a version's state follows its verification; a finished run reloads.
function setupDraft(root) {
  const draftId = Number(root.dataset.draftPage);
  onCaseEvent("verification.progress", (event) => {
    if (event.draft_id !== draftId || !Number.isInteger(event.version)) return;
    if (FINISHED.has(event.status)) {
      redraw();
      return;
    }
    const badge = root.querySelector(`tr[data-version="${event.version}"] [data-field="state"] .badge`);
    if (!badge || !Number.isInteger(event.claims_done) || !Number.isInteger(event.claim_count)) return;
    badge.className = "badge vstate vstate--pending";
    const label = event.status === "running" ? "Verification running" : "Verification queued";
    badge.textContent = event.claim_count
      ? `${label} (${event.claims_done} of ${event.claim_count} claims)`
      : label;
  });
}

const versionRoot = document.querySelector("[data-draft-version]");
if (versionRoot) {
  setupVersion(versionRoot);
  setupNotes(versionRoot);
}
const draftRoot = document.querySelector("[data-draft-page]");
if (draftRoot) setupDraft(draftRoot);
