/**
 * The viewer's stylesheet and script, served as files of their own so the Content-Security-
 * Policy can forbid every inline script and style. The script only adds keyboard navigation;
 * every page works without it.
 */

export const viewerCss = `
:root{color-scheme:light dark;--fg:#111;--bg:#fff;--muted:#555;--line:#bbb;--mod:#eef3fb;--user:#f6f1e8;--focus:#1f5fa8}
@media (prefers-color-scheme:dark){:root{--fg:#eee;--bg:#161616;--muted:#aaa;--line:#444;--mod:#1c2533;--user:#2b261d;--focus:#7fb0ff}}
body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;margin:0 auto;max-width:70rem;padding:0 1.25rem 2rem;color:var(--fg);background:var(--bg);line-height:1.45}
.skip{position:absolute;left:-999px}.skip:focus{left:1rem;top:1rem;background:var(--bg);padding:.3rem}
header{border-bottom:1px solid var(--line);padding:.6rem 0}.source{margin:0;color:var(--muted);font-size:.85rem}.loc{font-family:monospace;margin-left:.5rem}
nav[aria-label=Breadcrumb]{margin-top:.2rem}
h1{font-size:1.5rem;margin:.8rem 0 .3rem}h2{font-size:1.2rem}
table.list{border-collapse:collapse;width:100%;font-size:.92rem}table.list caption{text-align:left;color:var(--muted);padding:.3rem 0}
.list th,.list td{border-bottom:1px solid var(--line);padding:.3rem .4rem;text-align:left;vertical-align:top}.list .n{text-align:right}
.list td.text{max-width:28rem}
[data-nav-item]:focus{outline:3px solid var(--focus);outline-offset:2px}
.filter{display:flex;flex-wrap:wrap;gap:.6rem 1rem;align-items:end;margin:.6rem 0}.filter label{display:flex;flex-direction:column;font-size:.85rem}
.meta{color:var(--muted)}dl.meta{display:grid;grid-template-columns:max-content 1fr;gap:.15rem 1rem;color:var(--fg)}dl.meta dt{font-weight:600}dl.meta dd{margin:0}
.dialogue{list-style:none;padding:0}.turn{border:1px solid var(--line);border-radius:6px;padding:.5rem .8rem;margin:.6rem 0}
.question{font-weight:600;margin:.1rem 0 .4rem}.moderator{background:var(--mod);padding:.3rem .6rem;border-radius:4px}.user{background:var(--user);padding:.3rem .6rem;border-radius:4px;margin-top:.3rem}
.who{font-size:.75rem;text-transform:uppercase;letter-spacing:.05em;color:var(--muted)}.said{white-space:pre-wrap;margin:.1rem 0;overflow-wrap:anywhere}
.media{margin:.4rem 0;max-width:100%}.media figcaption{font-size:.8rem;color:var(--muted);overflow-wrap:anywhere}
.media audio{width:min(100%,28rem)}
.media video{display:block;width:min(100%,36rem);height:auto;max-height:60vh;aspect-ratio:16/9;object-fit:contain;background:#000}
mark{background:#ffe066;color:#111;padding:0 .1em;border-radius:2px}
.found{list-style:none;margin:0;padding:0}.found li{margin:0 0 .35rem}.found .where{display:block;font-size:.8rem;color:var(--muted)}
.snippet{overflow-wrap:anywhere}.turn.hit{border-color:var(--focus);border-width:2px}.found-in{font-size:.95rem}
.pager .position{color:var(--muted)}.download{margin:.3rem 0}
.note{color:var(--muted);font-size:.9rem}.pager{display:flex;gap:1.5rem}
footer{border-top:1px solid var(--line);margin-top:2rem;font-size:.85rem;color:var(--muted)}
header,main,footer{overflow-wrap:break-word}.filter input,.filter select{max-width:100%}
@media (max-width:40rem){body{padding:0 .7rem 1.5rem}.loc{display:block;margin:0}.filter label{flex:1 1 100%}
table.list thead{position:absolute;left:-9999px}table.list,table.list tbody,table.list tr,table.list th,table.list td{display:block;width:auto}
table.list tr{border-bottom:1px solid var(--line);padding:.4rem 0}.list th,.list td{border:0;padding:.1rem 0;text-align:left}.list .n{text-align:left}
.list [data-label]::before{content:attr(data-label) ": ";color:var(--muted);font-size:.8rem}.list td.text{max-width:none}
dl.meta{grid-template-columns:1fr}dl.meta dd{margin-bottom:.3rem}.pager{flex-wrap:wrap;gap:.5rem 1rem}}kbd{border:1px solid var(--line);border-radius:3px;padding:0 .25rem}
@media print{header nav,footer,.filter,.pager,.media{display:none}}
`;

export const viewerJs = `'use strict';
(function () {
  var current = -1;
  function items() { return Array.prototype.slice.call(document.querySelectorAll('[data-nav-item]')); }
  function move(step) {
    var list = items();
    if (list.length === 0) return;
    var at = list.indexOf(document.activeElement);
    if (at < 0) at = current;
    current = Math.max(0, Math.min(list.length - 1, at + step));
    list[current].focus();
    list[current].scrollIntoView({ block: 'nearest' });
  }
  function focused() {
    var list = items();
    var at = list.indexOf(document.activeElement);
    return at >= 0 ? list[at] : null;
  }
  function follow(selector) {
    var link = document.querySelector(selector);
    if (link) window.location.assign(link.href);
  }
  document.addEventListener('keydown', function (event) {
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    var target = event.target;
    if (target && target.closest && target.closest('input, textarea, select')) {
      if (event.key === 'Escape') target.blur();
      return;
    }
    var item = focused();
    switch (event.key) {
      case 'j': move(1); break;
      case 'k': move(-1); break;
      case 'Enter': {
        if (!item || target !== item) return;
        var link = item.querySelector('a[href]');
        if (link) window.location.assign(link.href);
        break;
      }
      case 'p': {
        var scope = item || document;
        var media = scope.querySelector('audio, video');
        if (!media) return;
        if (media.paused) media.play(); else media.pause();
        break;
      }
      case '/': {
        var filter = document.querySelector('[data-filter]');
        if (!filter) return;
        filter.focus();
        break;
      }
      case '[': follow('a[rel=prev]'); break;
      case ']': follow('a[rel=next]'); break;
      case 'u': {
        var crumbs = document.querySelectorAll('nav[aria-label=Breadcrumb] a');
        if (crumbs.length > 1) window.location.assign(crumbs[crumbs.length - 2].href);
        break;
      }
      default: return;
    }
    event.preventDefault();
  });
  // A shared link to a turn (#turn-3) focuses it.
  if (location.hash) {
    var turn = document.getElementById(location.hash.slice(1));
    if (turn && turn.hasAttribute('data-nav-item')) turn.focus();
  }
})();
`;
