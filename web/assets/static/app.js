// Saves review codes, notes and adjudications on every change, so nothing
// typed is lost if the browser closes. Plain form posts work without it.
(function () {
  function save(form) {
    var status = form.querySelector(".status");
    var body = new URLSearchParams(new FormData(form));
    if (status) { status.textContent = "saving…"; status.className = "status"; }
    fetch(form.action, { method: "POST", body: body, headers: { "X-Requested-With": "budge" }, credentials: "same-origin" })
      .then(function (r) {
        if (!r.ok) { return r.text().then(function (t) { throw new Error(t); }); }
        if (status) { status.textContent = "saved"; status.className = "status saved"; }
        form.dataset.saved = String((Number(form.dataset.saved) || 0) + 1);
      })
      .catch(function (e) {
        if (status) { status.textContent = "not saved: " + e.message; status.className = "status error"; }
      });
  }
  document.querySelectorAll("form.autosave").forEach(function (form) {
    var timer;
    form.addEventListener("change", function () { save(form); });
    form.addEventListener("input", function (ev) {
      if (ev.target.tagName !== "TEXTAREA") { return; }
      clearTimeout(timer);
      timer = setTimeout(function () { save(form); }, 400);
    });
    form.addEventListener("submit", function (ev) { ev.preventDefault(); save(form); });
  });
})();
