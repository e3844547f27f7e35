// Live pages: every poll interval, fetch this page again and swap in its [data-live] sections.
// No full reload (scroll, open forms and the charts stay); a section holding a focused form is left alone.
(function () {
  "use strict";
  var sections = document.querySelectorAll("[data-live][id]");
  var status = document.getElementById("status-line");
  if (!sections.length) return;
  var every = parseInt(document.body.dataset.refreshMs, 10) || 10000;
  var failingSince = null;
  var shown = {};  // section id -> the markup it shows, as the server sent it

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
          var markup = replacement.innerHTML;
          if (!(old.id in shown)) shown[old.id] = old.innerHTML;
          if (markup === shown[old.id]) return;  // unchanged (a grid of 20,000 ports: not laid out again)
          var sizes = blockSizes(old);
          old.innerHTML = markup;
          shown[old.id] = markup;
          keepSizes(old, sizes);
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

  // The grid's host blocks are drawn as they near the screen (content-visibility, dashboard.css) and stand in
  // at a guessed size until then: each new block takes the size its predecessor had, so the blocks above the
  // screen keep their place and the page does not jump at a refresh.
  function blockSizes(section) {
    var sizes = {};
    section.querySelectorAll(".gnode > .gn").forEach(function (name) {
      var block = name.parentNode, box = block.getBoundingClientRect(), style = getComputedStyle(block);
      var frame = function (a, b) { return parseFloat(style["padding" + a]) + parseFloat(style["padding" + b]) +
        parseFloat(style["border" + a + "Width"]) + parseFloat(style["border" + b + "Width"]); };
      // contain-intrinsic-size is the content box's
      sizes[name.getAttribute("href")] = "auto " + (box.width - frame("Left", "Right")) + "px auto " +
        (box.height - frame("Top", "Bottom")) + "px";
    });
    return sizes;
  }

  function keepSizes(section, sizes) {
    section.querySelectorAll(".gnode > .gn").forEach(function (name) {
      var size = sizes[name.getAttribute("href")];
      if (size) name.parentNode.style.containIntrinsicSize = size;
    });
  }

  function schedule() { window.setTimeout(refresh, every); }
  schedule();
})();
