// The page keeps itself current where scripts run: it listens to /_storesh/events and, at each change of the
// bucket, reads itself again and puts the new `main` in place (everything works without it, by reloading). Its forms
// send their edits and uploads to this server's APIs. Served as /_storesh/page.js (PageAssets), never inline, so
// that the page's Content-Security-Policy allows no inline script.
(function () {
  if (!window.EventSource || !window.fetch || !window.DOMParser) return;
  var live = document.getElementById("live");
  var shown = new URLSearchParams(location.search).get("bucket");
  var events = new EventSource("/_storesh/events" + (shown ? "?bucket=" + encodeURIComponent(shown) : ""));
  events.onopen = function () { live.textContent = "Live: changes to the bucket appear here as they happen."; };
  // The forms are the script's: shown only where it runs.
  function showForms() {
    document.querySelectorAll("form.edit, form.upload, form.identity").forEach(function (form) { form.hidden = false; });
    document.querySelectorAll(".scriptless").forEach(function (note) { note.hidden = true; });
  }
  showForms();
  // Whom edits are made as, kept for this tab (the header is not replaced by live updates).
  var identity = document.querySelector("form.identity");
  if (identity) {
    identity.elements.as.value = sessionStorage.getItem("storesh.as") || "owner";
    identity.elements.uid.value = sessionStorage.getItem("storesh.uid") || "";
    identity.addEventListener("change", function () {
      sessionStorage.setItem("storesh.as", identity.elements.as.value);
      sessionStorage.setItem("storesh.uid", identity.elements.uid.value.trim());
    });
    identity.addEventListener("submit", function (event) { event.preventDefault(); });
  }
  function base64url(text) {
    return btoa(unescape(encodeURIComponent(text))).replace(/[+]/g, "-").replace(/[/]/g, "_").replace(/=+$/, "");
  }
  // Where a change goes and with which headers: the owner's to the JSON API; anyone else's to the v0 API,
  // which the rules decide, signed in with an unsigned emulator ID token (null: no uid was given).
  var pageToken = document.querySelector('meta[name="storesh-page-token"]').content;
  function route(json, headers) {
    headers["X-Storesh-Page-Token"] = pageToken;
    var as = identity ? identity.elements.as.value : "owner", uid = identity ? identity.elements.uid.value.trim() : "";
    if (as === "owner") return { url: json, headers: headers, who: "as the owner" };
    if (as === "user" && !uid) return null;
    if (as === "user") {
      headers.Authorization = "Firebase " + base64url(JSON.stringify({ alg: "none", typ: "JWT" })) + "." +
        base64url(JSON.stringify({ sub: uid, user_id: uid })) + ".";
    }
    return { url: null, headers: headers, who: as === "user" ? "as " + uid : "signed out" };
  }
  var noUid = "Give a uid at the top of the page to act as a signed-in user.";
  // One read of the page at a time, and at most one more after it, however many events arrive. An edit
  // being typed, or files chosen, are not swept away: the page waits until they are sent (an edit's
  // preconditions catch a change made meanwhile).
  var reading = false, again = null;
  function refresh(why) {
    if (reading || document.querySelector("form[data-dirty]")) {
      again = why;
      if (!reading) live.textContent = "The bucket changed (" + why + "): shown once your edit or upload is sent.";
      return;
    }
    reading = true;
    fetch(location.href, { cache: "no-store" }).then(function (answer) { return answer.text(); }).then(function (html) {
      var next = new DOMParser().parseFromString(html, "text/html").querySelector("main");
      if (next) {
        var outcomes = Array.from(document.querySelectorAll("main .outcome"), function (p) { return p.textContent; });
        document.querySelector("main").replaceWith(next);
        showForms();
        // What the last edit did stays in view.
        document.querySelectorAll("main .outcome").forEach(function (p, index) { if (outcomes[index]) p.textContent = outcomes[index]; });
      }
      live.textContent = "Updated at " + new Date().toLocaleTimeString() + ": " + why + ".";
    }).finally(function () {
      reading = false;
      if (again) { var later = again; again = null; refresh(later); }
    });
  }
  function failure(answer) {
    return answer.json().then(function (body) { return body.error && body.error.message || answer.statusText; },
                              function () { return answer.statusText; });
  }
  function touched(event) {
    var form = event.target.closest && event.target.closest("form.edit, form.upload");
    if (form) form.dataset.dirty = "1";
  }
  document.addEventListener("input", touched);
  document.addEventListener("change", touched);
  document.addEventListener("submit", function (event) {
    var form = event.target;
    if (form.matches("form.edit")) { event.preventDefault(); save(form); }
    if (form.matches("form.upload")) { event.preventDefault(); upload(form); }
  });
  document.addEventListener("click", function (event) {
    if (event.target.matches && event.target.matches("form.edit button.delete")) remove(event.target.form);
  });
  function conditions(form, withMetageneration) {
    return "?ifGenerationMatch=" + form.dataset.generation + (withMetageneration ? "&ifMetagenerationMatch=" + form.dataset.metageneration : "");
  }
  function settle(form, text) {
    delete form.dataset.dirty;
    form.querySelector(".outcome").textContent = text;
    refresh(text.replace(/[.]$/, ""));
  }
  // Only what changed: a property set, or null to remove it; custom keys likewise, under metadata.
  function save(form) {
    var body = {}, metadata = {}, before = {}, after = {};
    form.querySelectorAll("input.property").forEach(function (input) {
      if (input.value !== input.dataset.was) body[input.name] = input.value === "" ? null : input.value;
    });
    form.querySelectorAll(".custom-row").forEach(function (row) {
      var key = row.querySelector(".key"), value = row.querySelector(".value");
      if (key.dataset.was) before[key.dataset.was] = value.dataset.was;
      if (key.value !== "" && value.value !== "") after[key.value] = value.value;
    });
    Object.keys(before).forEach(function (key) { if (!(key in after)) metadata[key] = null; });
    Object.keys(after).forEach(function (key) { if (before[key] !== after[key]) metadata[key] = after[key]; });
    if (Object.keys(metadata).length) body.metadata = metadata;
    if (!Object.keys(body).length) { form.querySelector(".outcome").textContent = "Nothing to save: no field changed."; return; }
    var to = route(form.dataset.object, { "Content-Type": "application/json" });
    if (!to) { form.querySelector(".outcome").textContent = noUid; return; }
    fetch((to.url || form.dataset.firebase) + conditions(form, true), {
      method: "PATCH", headers: to.headers, body: JSON.stringify(body)
    }).then(function (answer) {
      if (answer.ok) return answer.json().then(function (object) { settle(form, "Saved " + to.who + ": metageneration " + object.metageneration + "."); });
      if (answer.status === 412) return settle(form, "Not saved: the object changed since the page showed it. Nothing was changed; it is shown as it is now.");
      return failure(answer).then(function (message) { settle(form, "Not saved " + to.who + " (" + answer.status + "): " + message); });
    }, function (error) { form.querySelector(".outcome").textContent = "Not saved: " + error; });
  }
  function remove(form) {
    // A deletion is asked about first: nothing is deleted by a click alone.
    if (!window.confirm("Delete " + form.dataset.name + "? This cannot be undone here.")) return;
    var to = route(form.dataset.object, {});
    if (!to) { form.querySelector(".outcome").textContent = noUid; return; }
    fetch((to.url || form.dataset.firebase) + conditions(form, false), { method: "DELETE", headers: to.headers }).then(function (answer) {
      if (answer.ok) { location.href = form.dataset.folder; return; }
      if (answer.status === 412) return settle(form, "Not deleted: the object changed since the page showed it. It is shown as it is now.");
      return failure(answer).then(function (message) { settle(form, "Not deleted " + to.who + " (" + answer.status + "): " + message); });
    });
  }
  // One file after another; each only where nothing has its name (ifGenerationMatch=0).
  function upload(form) {
    var files = Array.from(form.querySelector("input[type=file]").files), done = [], outcome = form.querySelector(".outcome");
    if (!files.length) { outcome.textContent = "Choose a file first."; return; }
    if (!route("", {})) { outcome.textContent = noUid; return; }
    (function next() {
      if (!files.length) { settle(form, done.join(" ")); return; }
      var file = files.shift(), name = form.dataset.prefix + file.name;
      var to = route(form.dataset.upload + "?uploadType=media&", { "Content-Type": file.type || "application/octet-stream" });
      fetch((to.url || form.dataset.firebase + "?") + "ifGenerationMatch=0&name=" + encodeURIComponent(name), {
        method: "POST", headers: to.headers, body: file
      }).then(function (answer) {
        if (answer.ok) { done.push("Uploaded " + name + " " + to.who + "."); return; }
        if (answer.status === 412) { done.push(name + " exists: not replaced."); return; }
        return failure(answer).then(function (message) { done.push(name + " not uploaded " + to.who + " (" + answer.status + "): " + message); });
      }).then(next);
    })();
  }
  events.addEventListener("change", function () { refresh("the bucket changed"); });
  events.addEventListener("request", function () { refresh("a request arrived"); });
})();
