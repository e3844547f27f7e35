// Port charts with the bundled plotly.js, from /ports/<node>/<device>/<port>/series?range=R (or ?from=F&to=T).
// Nulls are gaps (connectgaps off): a missing poll is never drawn as a zero line. Every chart is captioned
// with its time range and the resolution it draws. Dragging across a chart (Plotly's zoom) shows that range:
// its from/to go in the page's URL, so a link shares the view; a double click goes back to the named range.
(function () {
  "use strict";
  var box = document.getElementById("charts");
  if (!box || !window.Plotly) return;
  var seriesPath = box.dataset.seriesUrl.split("?")[0];
  var query = box.dataset.seriesUrl.split("?")[1] || "";  // the window the server validated
  var config = { displaylogo: false, responsive: true };
  // Okabe-Ito: distinct for colour-blind eyes; an error group has at most 4 counters.
  var PALETTE = ["#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#7F7F7F"];
  var source = document.getElementById("series-source");
  var message = document.getElementById("series-message");
  var drawing = false;
  var sparse = false;  // few points (between gaps): markers, or a lone point would not show

  function utc(iso) { return iso ? iso.replace("T", " ").replace(/(:\d\d)(\.\d+)?Z$/, "$1").slice(0, 16) : ""; }

  function finite(values) { return values.filter(function (v) { return v !== null && isFinite(v); }); }

  // Plain numbers with the unit in the axis title: never an SI "m" (200m reads as 200 million).
  function yaxis(title, values, extra) {
    var known = finite(values);
    var top = known.length ? Math.max.apply(null, known) : 0;
    var axis = { title: { text: title }, rangemode: "tozero", tickformat: top >= 1e4 ? "~s" : ",~r",
                 hoverformat: ",.4~r", exponentformat: "none" };
    if (!known.length || top <= 0) axis.range = [0, 1];
    return Object.assign(axis, extra || {});
  }

  function layout(s, title, axis, empty, none) {
    var l = {
      title: { text: title, font: { size: 14 } },
      margin: { l: 80, r: 20, t: 36, b: 64 },
      // The asked range, even where nothing was taken; a new port's from when it is monitored (axis_since).
      xaxis: { type: "date", range: [s.axis_since || s.since, s.until] },
      yaxis: axis,
      // Below the date that heads the time axis ("Dec 2, 2026"), not over it.
      legend: { orientation: "h", y: -0.3, yanchor: "top" },
      hovermode: "x unified",
      // The page's own panel and ink (screens.css), so a chart reads in the dark theme as in the light one.
      paper_bgcolor: "rgba(0,0,0,0)",
      plot_bgcolor: "rgba(0,0,0,0)",
      font: { color: window.getComputedStyle(document.body).color },
    };
    if (empty) l.annotations = [{ text: none || "no data in this range", showarrow: false, xref: "paper", yref: "paper", x: 0.5, y: 0.5 }];
    return l;
  }

  function line(name, x, y, extra) {
    return Object.assign({ type: "scatter", mode: sparse ? "lines+markers" : "lines", marker: { size: 4 }, name: name,
                           x: x, y: y, connectgaps: false }, extra || {});
  }

  function markers(name, times, symbol) {
    return { type: "scatter", mode: "markers", name: name, x: times, y: times.map(function () { return 0; }),
             marker: { symbol: symbol, size: 10, color: window.getComputedStyle(document.body).color } };
  }

  function constant(name, x, value) {
    if (value === null || !x.length) return null;
    return line(name, [x[0], x[x.length - 1]], [value, value], { mode: "lines", line: { dash: "dash" } });
  }

  function caption(s) {
    var words = s.resolution === "raw" ? "raw samples" : s.resolution + " rollups";
    if (s.raw_since && s.rolled) words += ", then raw samples from " + utc(s.raw_since) + " (not yet rolled up)";
    else if (s.raw_since) words = "raw samples from " + utc(s.raw_since) + " (none rolled up into " + words + " yet)";
    var fitted = s.axis_since && s.axis_since !== s.since;
    var text = utc(fitted ? s.axis_since : s.since) + " to " + utc(s.until) + " UTC, " + words;
    if (fitted) text += "; this port is monitored since " + utc(s.port_monitored_since) + " UTC (the " + s.range +
      " range starts before)";
    else if (s.monitored_since && s.since < s.monitored_since) text += "; monitored since " + utc(s.monitored_since) + " UTC";
    return text;
  }

  function empty(values) { return !finite(values).length; }

  function drawErrors(s, x) {
    var holder = document.getElementById("chart-errors");
    // Every cell first: Plotly sizes a chart to its cell when it draws it, and the grid's cells change as it fills.
    s.error_groups.forEach(function (group, i) {
      if (document.getElementById("chart-errors-" + i)) return;
      var div = document.createElement("div");
      div.className = "chart";
      div.id = "chart-errors-" + i;
      holder.appendChild(div);
    });
    s.error_groups.forEach(function (group, i) {
      var id = "chart-errors-" + i;
      var div = document.getElementById(id);
      var traces = group.counters.map(function (c) {
        return line(c.name, x, s.errors[c.column], { line: { color: PALETTE[c.slot % PALETTE.length] } });
      });
      var all = [].concat.apply([], group.counters.map(function (c) { return s.errors[c.column]; }));
      Plotly.react(id, traces, layout(s, group.title, yaxis("errors/h", all), empty(all)), config);
      watch(div);
    });
  }

  function draw(s) {
    drawing = true;
    var x = s.t;
    sparse = x.length < 60;
    var text = caption(s);
    source.textContent = x.length + " points since " + utc(s.axis_since || s.since) + " (times in UTC)";
    box.querySelectorAll(".chart-range").forEach(function (c) { c.textContent = text; });
    message.hidden = !s.message;
    message.textContent = s.message ? s.message + " (" + utc(s.since) + " to " + utc(s.until) + " UTC)" : "";
    // A range before the first data: nothing to draw, and no empty axes (Plotly's default one is in the year
    // 2000). A range since then that this port has no samples in keeps its axes, for the next drag.
    var before = !!s.message && (!s.monitored_since || s.until <= s.monitored_since);
    box.hidden = before;
    if (before) {
      box.querySelectorAll(".chart").forEach(function (div) {
        if (div.classList.contains("js-plotly-plot")) Plotly.purge(div);
        delete div.dataset.watched;
      });
      drawing = false;
      return;
    }
    var traffic = [line("receive", x, s.rx_gbps), line("transmit", x, s.tx_gbps)];
    // The capacity only where the link was up, at the rate it trained at then: a down link has none.
    if (!empty(s.link_gbps)) {
      traffic.push(line("link capacity" + (s.link ? " (" + s.link + ")" : ""), x, s.link_gbps,
        { line: { dash: "dash", shape: "hv", color: "#666" }, text: s.link_name, hoverinfo: "x+y+text" }));
    }
    if (s.resets.length) traffic.push(markers("counter reset", s.resets, "x"));
    if (s.capped.length) traffic.push(markers("counter capped", s.capped, "triangle-up"));
    var bits = s.rx_gbps.concat(s.tx_gbps);
    Plotly.react("chart-traffic", traffic, layout(s, "Throughput", yaxis("Gb/s", bits.concat(s.link_gbps)), empty(bits)), config);
    var packets = s.rx_pps.concat(s.tx_pps);
    Plotly.react("chart-packets", [line("receive", x, s.rx_pps), line("transmit", x, s.tx_pps)],
      layout(s, "Packets", yaxis("pkt/s", packets), empty(packets)), config);
    drawErrors(s, x);
    // The share of link time lost (port_xmit_wait in its device's bytes per count): above 100% the unit is wrong
    // for the device, so the axis goes past 100 rather than hide it.
    var lost = s.congestion_pct, most = Math.max.apply(null, finite(lost).concat([100]));
    var unit = s.congestion_unit ? " (port_xmit_wait at " + s.congestion_unit + ")" : "";
    Plotly.react("chart-congestion", [line("link time lost waiting for credits", x, lost)],
      layout(s, "Congestion" + unit, yaxis("% of link time lost to congestion", [], { range: [0, most] }), empty(lost)),
      config);
    var link = [line("trained", x, s.link_gbps, { line: { shape: "hv" }, text: s.link_name, hoverinfo: "x+y+text" })];
    var expected = constant("expected" + (s.expected ? " (" + s.expected + ")" : ""), x, s.expected_gbps);
    if (expected) link.push(expected);
    Plotly.react("chart-link", link, layout(s, "Link speed × width", yaxis("Gb/s", s.link_gbps.concat([s.expected_gbps])),
      empty(s.link_gbps), "no link in this range"), config);
    ["chart-traffic", "chart-packets", "chart-congestion", "chart-link"].forEach(function (id) {
      watch(document.getElementById(id));
    });
    drawing = false;
  }

  // Plotly's "2026-12-02 01:33:12.345" (the axis is in UTC, as the data) as the ISO time the server reads.
  function iso(value) {
    var m = String(value).match(/^(\d{4}-\d\d-\d\d)[ T](\d\d:\d\d(:\d\d)?)/);
    return m ? m[1] + "T" + m[2] + (m[3] ? "" : ":00") + "Z" : null;
  }

  function show(params) {
    query = params.toString();
    var page = new URLSearchParams(window.location.search);
    ["range", "from", "to"].forEach(function (k) { page.delete(k); });
    params.forEach(function (v, k) { page.set(k, v); });
    window.history.pushState(null, "", "?" + page.toString());
    var custom = params.has("from");
    document.querySelectorAll(".ranges a").forEach(function (a) {
      a.classList.toggle("current", !custom && a.getAttribute("href") === "?range=" + params.get("range"));
    });
    var from = document.querySelector(".range-form input[name=from]");
    var to = document.querySelector(".range-form input[name=to]");
    if (from) from.value = custom ? params.get("from").slice(0, 16) : "";
    if (to) to.value = custom ? params.get("to").slice(0, 16) : "";
    load();
  }

  function zoomed(event) {
    if (drawing || !event) return;
    var start = iso(event["xaxis.range[0]"] || (event["xaxis.range"] || [])[0]);
    var end = iso(event["xaxis.range[1]"] || (event["xaxis.range"] || [])[1]);
    if (start && end) return show(new URLSearchParams({ from: start, to: end }));
    if (event["xaxis.autorange"]) {
      var named = new URLSearchParams(box.dataset.seriesUrl.split("?")[1] || "").get("range") || "1h";
      show(new URLSearchParams({ range: named }));
    }
  }

  function watch(div) {
    if (div && !div.dataset.watched) {
      div.dataset.watched = "1";
      div.on("plotly_relayout", zoomed);
    }
  }

  function load() {
    fetch(seriesPath + "?" + query, { credentials: "same-origin" })
      .then(function (r) {
        return r.json().then(function (body) {
          if (!r.ok) throw new Error(body.error || "series: HTTP " + r.status);
          return body;
        });
      })
      .then(draw)
      .catch(function (e) {
        drawing = false;
        source.textContent = "Charts unavailable: " + e.message;
      });
  }

  window.addEventListener("popstate", function () {
    var page = new URLSearchParams(window.location.search);
    var params = new URLSearchParams();
    ["range", "from", "to"].forEach(function (k) { if (page.get(k)) params.set(k, page.get(k)); });
    query = params.toString() || (box.dataset.seriesUrl.split("?")[1] || "");
    load();
  });
  load();
  document.addEventListener("fabric:refreshed", load);
})();
