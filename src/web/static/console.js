// Switchboard web console: live refresh. Pages read fine without it; with
// it, the parts marked data-live are replaced every few seconds by those of
// a fresh copy of the same page (server-rendered, already escaped).
"use strict";
(function () {
  var main = document.querySelector("main[data-refresh]");
  if (!main || !window.fetch || !window.DOMParser) return;
  var every = Math.max(2, parseInt(main.getAttribute("data-refresh"), 10) || 5) * 1000;
  function refresh() {
    if (document.hidden) return;
    fetch(location.href, { credentials: "same-origin", headers: { "Accept": "text/html" } })
      .then(function (r) { return r.ok ? r.text() : Promise.reject(r.status); })
      .then(function (html) {
        var fresh = new DOMParser().parseFromString(html, "text/html");
        document.querySelectorAll("[data-live][id]").forEach(function (old) {
          var next = fresh.getElementById(old.id);
          if (next && !old.contains(document.activeElement)) old.replaceWith(document.importNode(next, true));
        });
      })
      .catch(function () { /* the next round tries again */ });
  }
  setInterval(refresh, every);
})();
