// The case page's member picker: as a lawyer types part of a colleague's name or e-mail, the
// people who may be added (GET <data-member-picker>?q=) appear as radio buttons under the box;
// choosing one and pressing "Add member" adds that person. Without this script the server does
// the same search when the form is sent (templates/cases/member_picker.html).

const DELAY_MS = 200;

function setup(form) {
  const url = form.dataset.memberPicker;
  const box = form.querySelector('input[name="email"]');
  const results = form.querySelector("[data-member-results]");
  const list = form.querySelector("[data-member-list]");
  const status = form.querySelector("[data-member-status]");
  if (!url || !box || !results || !list || !status) return;
  let timer = 0;
  let asked = 0;

  function show(people, query) {
    list.replaceChildren();
    for (const person of people) {
      const item = document.createElement("li");
      const label = document.createElement("label");
      const radio = document.createElement("input");
      radio.type = "radio";
      radio.name = "user_id";
      radio.value = String(person.id);
      if (people.length === 1) radio.checked = true;
      const extra = document.createElement("span");
      extra.className = "muted";
      extra.textContent = ` ${person.email} · ${person.role_label}`;
      label.append(radio, ` ${person.name}`, extra);
      item.append(label);
      list.append(item);
    }
    results.hidden = query.length < 2;
    if (query.length < 2) {
      status.textContent = "";
    } else if (people.length === 0) {
      status.textContent = `Nobody found for “${query}”.`;
      const item = document.createElement("li");
      item.className = "muted";
      item.textContent = `Nobody found for “${query}” who can be added to this case.`;
      list.append(item);
    } else {
      status.textContent = `${people.length} ${people.length === 1 ? "person" : "people"} found.`;
    }
  }

  async function search() {
    const query = box.value.trim();
    const mine = ++asked;
    if (query.length < 2) {
      show([], query);
      return;
    }
    try {
      const response = await fetch(`${url}?q=${encodeURIComponent(query)}`, {
        headers: { Accept: "application/json" },
        credentials: "same-origin",
      });
      if (!response.ok || mine !== asked) return;
      const body = await response.json();
      if (mine === asked) show(body.people || [], query);
    } catch {
      // Offline or refused: the form still works; the server searches when it is sent.
    }
  }

  box.addEventListener("input", () => {
    window.clearTimeout(timer);
    timer = window.setTimeout(search, DELAY_MS);
  });
  // Arrow down from the box goes to the first person found.
  box.addEventListener("keydown", (event) => {
    if (event.key !== "ArrowDown" || results.hidden) return;
    const first = list.querySelector('input[type="radio"]');
    if (first) {
      event.preventDefault();
      first.focus();
      first.checked = true;
    }
  });
}

for (const form of document.querySelectorAll("[data-member-picker]")) setup(form);
