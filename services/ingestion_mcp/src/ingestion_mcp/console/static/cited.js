"use strict";
// The page view: place the anchor where the first cited line lies (a percentage of the page's height; the CSP
// refuses inline styles, not styles set from a script) and scroll there once the picture is laid out.
(() => {
  const anchor = document.getElementById("page-cited-line");
  const img = document.getElementById("page-image");
  if (!anchor || !img) return;
  anchor.style.top = `${Number(anchor.dataset.top) || 0}%`;
  const go = () => anchor.scrollIntoView({ block: "center" });
  if (img.complete) go(); else img.addEventListener("load", go);
})();
