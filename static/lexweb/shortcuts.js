// Keyboard shortcuts of every page (issue 25 req 5): "?" lists those that apply here; "g" then
// a letter goes to a section of the case; single letters move the focus to the page's upload,
// bulk actions or search. Keys typed into a field, or with Ctrl, Alt or Meta, are left alone.
// The page also gets skip links to its upload form and bulk actions, after "Skip to main
// content".

const SHORTCUTS = [
  { keys: "?", text: "Show these shortcuts" },
  { keys: "g c", text: "Go to your cases", go: 'header a.brand' },
  { keys: "g o", text: "Go to the case's overview", go: ".case-nav li:first-child a" },
  { keys: "g d", text: "Go to the case's documents", go: '.case-nav a[href$="/documents/"]' },
  { keys: "g p", text: "Go to the case's packets", go: '.case-nav a[href$="/packets/"]' },
  { keys: "g r", text: "Go to the case's productions", go: '.case-nav a[href$="/productions/"]' },
  { keys: "u", text: "Upload files: the file chooser (Space or Enter opens it)", focus: 'main input[type="file"]' },
  { keys: "b", text: "Bulk actions on the documents listed", focus: "#id_bulk_scope" },
  { keys: "/", text: "Search or filter this page", focus: 'main input[type="search"], main input[name="q"]' },
];

const SKIPS = [
  { text: "Skip to upload", target: 'main input[type="file"]' },
  { text: "Skip to bulk actions", target: "#id_bulk_scope" },
];

function available(shortcut) {
  const selector = shortcut.go || shortcut.focus;
  return !selector || document.querySelector(selector) !== null;
}

// Inputs that take no typed text: a letter pressed on them is a shortcut.
const KEYLESS_INPUTS = new Set(["file", "checkbox", "radio", "button", "submit", "reset", "image", "range", "color"]);

function typing(target) {
  if (!(target instanceof Element)) return false;
  if (target.closest("dialog[open]") !== null) return true;
  if (target instanceof HTMLInputElement) return !KEYLESS_INPUTS.has(target.type);
  return target.closest("textarea, select, [contenteditable=''], [contenteditable='true']") !== null;
}

let dialog = null;

function help() {
  if (dialog === null) {
    dialog = document.createElement("dialog");
    dialog.className = "shortcuts-dialog";
    dialog.setAttribute("aria-labelledby", "shortcuts-heading");
    const heading = document.createElement("h2");
    heading.id = "shortcuts-heading";
    heading.textContent = "Keyboard shortcuts";
    const list = document.createElement("dl");
    list.className = "shortcuts-list";
    for (const shortcut of SHORTCUTS.filter(available)) {
      const keys = document.createElement("dt");
      for (const [index, key] of shortcut.keys.split(" ").entries()) {
        if (index) keys.append(" then ");
        const kbd = document.createElement("kbd");
        kbd.textContent = key;
        keys.append(kbd);
      }
      const what = document.createElement("dd");
      what.textContent = shortcut.text;
      list.append(keys, what);
    }
    // A page's own keys (the viewer's page turns and zoom) are listed too.
    const own = document.querySelector(".viewer-keys");
    const ownKeys = own ? own.cloneNode(true) : null;
    const note = document.createElement("p");
    note.className = "muted small";
    note.textContent = "Not while typing in a field. Escape closes this list.";
    const close = document.createElement("button");
    close.type = "button";
    close.className = "button";
    close.textContent = "Close";
    close.addEventListener("click", () => dialog.close());
    dialog.append(heading, list);
    if (ownKeys) dialog.append(ownKeys);
    dialog.append(note, close);
    document.body.append(dialog);
  }
  dialog.showModal();
}

let pending = "";
let pendingTimer = 0;

function run(shortcut) {
  if (shortcut.keys === "?") {
    help();
    return true;
  }
  if (shortcut.go) {
    const link = document.querySelector(shortcut.go);
    if (link instanceof HTMLAnchorElement) {
      link.click();
      return true;
    }
  }
  if (shortcut.focus) {
    const field = document.querySelector(shortcut.focus);
    if (field instanceof HTMLElement) {
      field.scrollIntoView({ block: "center" });
      field.focus();
      return true;
    }
  }
  return false;
}

function onKey(event) {
  if (event.ctrlKey || event.metaKey || event.altKey || event.defaultPrevented) return;
  if (typing(event.target)) return;
  const key = event.key;
  if (key.length !== 1) return;
  const typed = pending ? `${pending} ${key}` : key;
  window.clearTimeout(pendingTimer);
  pending = "";
  if (SHORTCUTS.some((s) => s.keys.startsWith(`${typed} `))) {
    pending = typed;
    pendingTimer = window.setTimeout(() => (pending = ""), 1500);
    event.preventDefault();
    return;
  }
  const shortcut = SHORTCUTS.find((s) => s.keys === typed && available(s));
  if (shortcut && run(shortcut)) event.preventDefault();
}

function addSkipLinks() {
  const first = document.querySelector(".skip-link");
  if (!first) return;
  let after = first;
  for (const skip of SKIPS) {
    const target = document.querySelector(skip.target);
    if (!(target instanceof HTMLElement) || !target.id) continue;
    const link = document.createElement("a");
    link.className = "skip-link";
    link.href = `#${target.id}`;
    link.textContent = skip.text;
    link.addEventListener("click", (event) => {
      event.preventDefault();
      target.scrollIntoView({ block: "center" });
      target.focus();
    });
    after.after(link);
    after = link;
  }
}

function addHint() {
  const footer = document.querySelector(".site-footer .wrap");
  if (!footer || !document.querySelector(".site-nav")) return;
  const button = document.createElement("button");
  button.type = "button";
  button.className = "button button--quiet button--small shortcuts-hint";
  button.textContent = "Keyboard shortcuts (?)";
  button.addEventListener("click", help);
  footer.append(" · ", button);
}

document.addEventListener("keydown", onKey);
addSkipLinks();
addHint();
