"use strict";
(function () {
  var polls = 0, live = document.getElementById("live");
  function get(o, path) {
    var parts = path.split(".");
    for (var i = 0; i < parts.length && o != null; i++) o = o[parts[i]];
    return o;
  }
  function fmt(v, f) {
    if (v == null) return "";
    switch (f) {
      case "pct": return (100 * v).toFixed(2) + "%";
      case "sci": return Number(v).toPrecision(3).replace(/\.?0+(e|$)/, "$1");
      case "f1": return Number(v).toFixed(1);
      case "int": return Math.round(v).toString();
      case "time": return new Date(v).toISOString().substring(11, 19);
    }
    return String(v);
  }
  function chart(rate) {
    var max = 0, pts = [];
    rate.forEach(function (p) { if (p.pps > max) max = p.pps; });
    var n = rate.length, top = max > 0 ? max : 1;
    rate.forEach(function (p, i) {
      var x = n > 1 ? (600 * i) / (n - 1) : 0;
      pts.push(x.toFixed(1) + "," + (118 - (116 * p.pps) / top).toFixed(1));
    });
    document.getElementById("line").setAttribute("points", pts.join(" "));
    document.getElementById("chartlen").textContent = n;
    document.getElementById("peak").textContent = max.toFixed(1);
  }
  function update(s) {
    document.querySelectorAll("[data-k]").forEach(function (el) {
      el.textContent = fmt(get(s, el.dataset.k), el.dataset.f);
    });
    document.querySelectorAll("tbody[data-t]").forEach(function (tb) {
      var rows = s[tb.dataset.t] || [], cols = tb.dataset.cols.split(",");
      var frag = document.createDocumentFragment();
      rows.forEach(function (r) {
        var tr = document.createElement("tr");
        cols.forEach(function (c) {
          var td = document.createElement("td"), v = r[c];
          if (c === "at") v = fmt(v, "time");
          else if (c === "ms" || c === "mean_ms" || c === "delay_ms" || c === "beat_age_s") v = fmt(v, "f1");
          td.textContent = v == null ? "" : v;
          tr.appendChild(td);
        });
        frag.appendChild(tr);
      });
      tb.replaceChildren(frag);
    });
    chart(s.rate || []);
    document.getElementById("state").textContent = s.done ? "finished" : "running";
  }
  function poll() {
    fetch("status.json", { cache: "no-store" })
      .then(function (r) { if (!r.ok) throw new Error(r.status); return r.json(); })
      .then(function (s) {
        update(s);
        polls++;
        live.dataset.polls = polls;
        live.className = "";
        live.textContent = "live";
      })
      .catch(function () { live.className = "stale"; live.textContent = "disconnected, retrying"; })
      .finally(function () { setTimeout(poll, 1000); });
  }
  poll();
})();
