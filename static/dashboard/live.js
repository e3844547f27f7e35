// Live pages: every poll interval, fetch this page again and swap in its [data-live] sections.
// No full reload (scroll, open forms and the charts stay); a section holding a focused form is left alone.
(function () {
  "use strict";
  var sections = document.querySelectorAll("[data-live][id]");
  var status = document.getElementById("status-line");
  if (!sections.length) return;
  var every = parseInt(document.body.dataset.refreshMs, 10) || 10000;
  var failingSince = null;

  function say(text) { if (status) status.textContent = text; }

  function refresh() {
    if (document.hidden) return schedule();
    fetch(window.location.href, { credentials: "same-origin", headers: { "X-Requested-With": "live" } })
      .then(function (response) {
        // A refusal that says why (a revoked wall link: views/wall.py) is shown as it is, not as a logout.
        if (response.status === 403 && response.headers.get("X-Fabric-Refused")) {
          throw new Error(response.headers.get("X-Fabric-Refused"));
        }
        if (response.redirected || response.status === 401 || response.status === 403) {
          throw new Error("logged out: reload the page to log in again");
        }
        return response.text();
      })
      .then(function (html) {
        var fresh = new DOMParser().parseFromString(html, "text/html");
        sections.forEach(function (old) {
          var replacement = fresh.getElementById(old.id);
          if (!replacement || old.contains(document.activeElement) && document.activeElement !== document.body) return;
          old.innerHTML = replacement.innerHTML;
        });
        failingSince = null;
        say("");
        document.dispatchEvent(new CustomEvent("fabric:refreshed"));
      })
      .catch(function (error) {
        failingSince = failingSince || new Date();
        say("Not updating since " + failingSince.toLocaleTimeString() + ": " + error.message +
            ". The figures below may be old.");
      })
      .finally(schedule);
  }

  function schedule() { window.setTimeout(refresh, every); }
  schedule();
})();
