// Light or dark: the system's preference (prefers-color-scheme, screens.css) unless the user chose one with the
// toggle, kept in localStorage. Loaded in <head> so the chosen theme is set before the page is drawn.
(function () {
  "use strict";
  var KEY = "fabricweb-theme";
  var root = document.documentElement;
  var dark = window.matchMedia ? window.matchMedia("(prefers-color-scheme: dark)") : null;

  function stored() {
    try { return window.localStorage.getItem(KEY); } catch (e) { return null; }  // storage may be off
  }
  function store(theme) {
    try { window.localStorage.setItem(KEY, theme); } catch (e) { /* the choice lasts this page only */ }
  }
  function current() {
    return root.dataset.theme || (dark && dark.matches ? "dark" : "light");
  }

  var chosen = stored();
  if (chosen === "dark" || chosen === "light") root.dataset.theme = chosen;

  function label(button) {
    var other = current() === "dark" ? "light" : "dark";
    button.textContent = other === "dark" ? "Dark theme" : "Light theme";
    button.title = "Switch to the " + other + " theme (kept in this browser)";
  }

  document.addEventListener("DOMContentLoaded", function () {
    var header = document.querySelector("header.top");
    var host = header || (document.body.classList.contains("wall") ? null : document.querySelector("main"));
    if (!host) return;  // the wall is dark by design
    var button = document.createElement("button");
    button.type = "button";
    button.id = "theme-toggle";
    button.className = "theme-toggle";
    label(button);
    button.addEventListener("click", function () {
      root.dataset.theme = current() === "dark" ? "light" : "dark";
      store(root.dataset.theme);
      label(button);
    });
    if (dark && dark.addEventListener) dark.addEventListener("change", function () { label(button); });
    if (header) header.appendChild(button); else host.insertBefore(button, host.firstChild);
  });
})();
