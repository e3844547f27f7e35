// Port charts with the bundled plotly.js, from /ports/<node>/<device>/<port>/series?range=R.
// Nulls are gaps (connectgaps off): a missing poll is never drawn as a zero line.
(function () {
  "use strict";
  var box = document.getElementById("charts");
  if (!box || !window.Plotly) return;
  var url = box.dataset.seriesUrl;
  var config = { displaylogo: false, responsive: true };

  function layout(title, yTitle, extra) {
    var base = {
      title: { text: title, font: { size: 14 } },
      margin: { l: 70, r: 20, t: 36, b: 30 },
      xaxis: { type: "date" },
      // SI prefixes (2G, not Plotly's default 2B for billions: B would read as bytes).
      yaxis: { title: { text: yTitle }, rangemode: "tozero", tickformat: "~s" },
      legend: { orientation: "h" },
      hovermode: "x unified",
    };
    return Object.assign(base, extra || {});
  }

  function line(name, x, y, extra) {
    return Object.assign({ type: "scatter", mode: "lines", name: name, x: x, y: y, connectgaps: false }, extra || {});
  }

  function markers(name, times, symbol) {
    return { type: "scatter", mode: "markers", name: name, x: times, y: times.map(function () { return 0; }),
             marker: { symbol: symbol, size: 10, color: "#000" } };
  }

  function constant(name, x, value, extra) {
    if (value === null || !x.length) return null;
    return line(name, [x[0], x[x.length - 1]], [value, value], Object.assign({ line: { dash: "dash" } }, extra || {}));
  }

  function draw(s) {
    var x = s.t;
    document.getElementById("series-source").textContent =
      s.source + ", " + x.length + " points since " + s.since.replace("T", " ").replace(/\.\d+Z$|Z$/, "") +
      " (times in UTC)";
    var traffic = [line("receive", x, s.rx), line("transmit", x, s.tx)];
    var cap = constant("link capacity" + (s.link ? " (" + s.link + ")" : ""), x, s.capacity_bytes_per_second);
    if (cap) traffic.push(cap);
    if (s.resets.length) traffic.push(markers("counter reset", s.resets, "x"));
    if (s.capped.length) traffic.push(markers("counter capped", s.capped, "triangle-up"));
    Plotly.react("chart-traffic", traffic, layout("Throughput", "bytes/s"), config);
    Plotly.react("chart-packets", [line("receive", x, s.rx_pps), line("transmit", x, s.tx_pps)],
      layout("Packets", "packets/s"), config);
    var errors = Object.keys(s.errors).map(function (name) { return line(name, x, s.errors[name]); });
    Plotly.react("chart-errors", errors, layout("Error counters", "errors/h"), config);
    Plotly.react("chart-congestion", [line("time in port_xmit_wait", x, s.congestion_pct)],
      layout("Congestion", "% of time waiting for credits", { yaxis: { title: { text: "% of time" }, range: [0, 100] } }),
      config);
    var link = [line("trained", x, s.link_gbps, { line: { shape: "hv" }, text: s.link_name, hoverinfo: "x+y+text" })];
    var expected = constant("expected" + (s.expected ? " (" + s.expected + ")" : ""), x, s.expected_gbps);
    if (expected) link.push(expected);
    Plotly.react("chart-link", link, layout("Link speed × width", "Gb/s"), config);
  }

  function load() {
    fetch(url, { credentials: "same-origin" })
      .then(function (r) { if (!r.ok) throw new Error("series: HTTP " + r.status); return r.json(); })
      .then(draw)
      .catch(function (e) { document.getElementById("series-source").textContent = "Charts unavailable: " + e.message; });
  }
  load();
  document.addEventListener("fabric:refreshed", load);
})();
