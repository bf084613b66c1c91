// The review list as a workspace (issue 25 req 2): select every document of the page and count
// what is selected; the bulk actions as a toolbar that appears with a selection (or "All
// matching"), each action in its own dialog with only its fields; a column chooser whose choice
// this browser remembers. Without this file the boxes tick one by one, the bulk form shows every
// field with one Apply button, and every column shows.

const form = document.querySelector("form[data-bulk]");
const all = document.querySelector("[data-select-all]");
const counter = document.querySelector("[data-selected-count]");
const scope = document.getElementById("id_bulk_scope");
const action = document.getElementById("id_bulk_action");
const toolbar = document.querySelector("[data-bulk-toolbar]");

function boxes() {
  return [...document.querySelectorAll('input[name="ids"][form="bulk-form"]')];
}

function ticked() {
  return boxes().filter((box) => box.checked).length;
}

function recount() {
  const list = boxes();
  const count = ticked();
  if (counter) counter.textContent = String(count);
  if (all) {
    all.checked = list.length > 0 && count === list.length;
    all.indeterminate = count > 0 && count < list.length;
  }
  // The toolbar is there while something is chosen: ticked rows, or every matching document.
  if (toolbar) toolbar.hidden = !(count > 0 || scope?.value === "all");
}

// --- Bulk actions: one dialog per action ------------------------------------------------------

// The fields an action cannot go without (the server says so too; here the browser asks first).
const NEEDED = { tag: ["tag_name"], untag: ["tag"], packet: ["packet"], withdraw: ["reason"] };

function what() {
  if (scope?.value === "all") {
    const most = form.dataset.maxBulk;
    return `Every document that matches the list’s filters${most ? ` (at most ${most})` : ""}.`;
  }
  const count = ticked();
  return `The ${count} selected document${count === 1 ? "" : "s"}.`;
}

function enhanceBulk() {
  form.classList.add("bulk-form--enhanced");
  for (const plain of form.querySelectorAll("[data-bulk-plain]")) plain.hidden = true;
  // In its own dialog a field the action needs is not "optional" (the form's other actions
  // leave it empty, hence the word without script).
  for (const field of Object.values(NEEDED).flat()) {
    const optional = form.querySelector(`label[for="id_bulk_${field}"] .optional`);
    if (optional) optional.hidden = true;
  }
  const scopeOptional = form.querySelector('label[for="id_bulk_scope"] .optional');
  if (scopeOptional) scopeOptional.hidden = true;
  const dialogs = new Map();
  for (const group of form.querySelectorAll("[data-bulk-action]")) {
    const name = group.dataset.bulkAction;
    const dialog = document.createElement("dialog");
    dialog.className = "bulk-dialog";
    dialog.dataset.bulkDialog = name;
    const title = group.querySelector(".bulk-action__title");
    if (title?.id) dialog.setAttribute("aria-labelledby", title.id);
    group.before(dialog);
    dialog.append(group);
    group.querySelector(".bulk-action__buttons").hidden = false;
    group.querySelector("[data-bulk-cancel]")?.addEventListener("click", () => dialog.close());
    dialog.addEventListener("close", () => {
      for (const field of NEEDED[name] || []) form.elements[field]?.removeAttribute("required");
      dialog.opener?.focus();
    });
    dialogs.set(name, dialog);
  }

  for (const button of document.querySelectorAll("[data-bulk-open]")) {
    button.addEventListener("click", () => {
      const dialog = dialogs.get(button.dataset.bulkOpen);
      if (!dialog) return;
      const line = dialog.querySelector("[data-bulk-what]");
      if (line) {
        line.textContent = what();
        line.hidden = false;
      }
      for (const field of NEEDED[dialog.dataset.bulkDialog] || []) {
        form.elements[field]?.setAttribute("required", "");
      }
      dialog.opener = button;
      dialog.showModal();
      dialog.querySelector("input:not([type=hidden]), select, textarea")?.focus();
    });
  }

  // The open dialog's own button submits it, with its action: Enter in one of its fields would
  // otherwise press the form's first submit button (another dialog's). Runs before app.js's
  // confirmation, which asks only the buttons that say so (what cannot be undone).
  form.addEventListener(
    "submit",
    (event) => {
      const open = form.querySelector("dialog.bulk-dialog[open]");
      if (!open) return;
      const own = open.querySelector("[data-bulk-submit]");
      if (event.submitter !== own) {
        event.preventDefault();
        event.stopImmediatePropagation();
        // Not from inside this submit event: the browser ignores a submit while one fires.
        window.setTimeout(() => form.requestSubmit(own), 0);
        return;
      }
      if (action) action.value = own.dataset.bulkSubmit;
    },
    true,
  );
}

// --- Columns: hidden in this browser, drawn by the server all the same -------------------------

const COLUMNS_KEY = "lexweb.reviewList.hiddenColumns";
// Shown at first: what fits 1366 px beside the file's name. Kind and Size are one click away.
const DEFAULT_HIDDEN = ["kind", "size"];

function storedHidden() {
  try {
    const stored = JSON.parse(window.localStorage.getItem(COLUMNS_KEY) || "null");
    if (Array.isArray(stored) && stored.every((name) => typeof name === "string")) return stored;
  } catch {
    // No storage here (or a bad value): the default columns.
  }
  return DEFAULT_HIDDEN;
}

function enhanceColumns() {
  const table = document.querySelector("[data-columns-table]");
  const chooser = document.querySelector("[data-column-chooser]");
  if (!table || !chooser) return;
  const heads = new Map([...table.tHead.rows[0].cells].filter((c) => c.dataset.col).map((c) => [c.dataset.col, c]));
  const checks = [...chooser.querySelectorAll("input[data-column]")].filter((box) => heads.has(box.value));
  const summary = chooser.querySelector("summary");

  function apply(hidden) {
    for (const [name, head] of heads) {
      // Cells are hidden by their place in the row (review_list.css): rows put in place live
      // follow without being touched.
      table.classList.toggle(`hide-col-${head.cellIndex + 1}`, hidden.includes(name));
    }
    for (const box of checks) box.checked = !hidden.includes(box.value);
    if (summary) summary.textContent = `Columns (${checks.length - checks.filter((b) => !b.checked).length} of ${checks.length})`;
  }

  function save(hidden) {
    try {
      if (hidden === null) window.localStorage.removeItem(COLUMNS_KEY);
      else window.localStorage.setItem(COLUMNS_KEY, JSON.stringify(hidden));
    } catch {
      // Not remembered: the choice holds for this page.
    }
  }

  for (const box of checks) {
    box.addEventListener("change", () => {
      const hidden = checks.filter((b) => !b.checked).map((b) => b.value);
      save(hidden);
      apply(hidden);
    });
  }
  chooser.querySelector("[data-columns-reset]")?.addEventListener("click", () => {
    save(null);
    apply(DEFAULT_HIDDEN);
  });
  apply(storedHidden());
  chooser.hidden = false;
  // A menu: a click elsewhere or Escape closes it.
  document.addEventListener("click", (event) => {
    if (chooser.open && !chooser.contains(event.target)) chooser.open = false;
  });
  chooser.addEventListener("keydown", (event) => {
    if (event.key === "Escape" && chooser.open) {
      chooser.open = false;
      summary?.focus();
    }
  });
}

if (form) {
  all?.addEventListener("change", () => {
    for (const box of boxes()) box.checked = all.checked;
    recount();
  });
  document.addEventListener("change", (event) => {
    if (event.target instanceof HTMLInputElement && event.target.name === "ids") recount();
  });
  scope?.addEventListener("change", recount);
  // Rows put in place or removed by the live list (app.js).
  document.addEventListener("documents:rows-changed", recount);
  enhanceBulk();
  recount();
}
enhanceColumns();
