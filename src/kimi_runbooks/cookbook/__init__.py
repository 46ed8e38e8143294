"""SGLang cookbook pages as data: read their config modules with a JavaScript engine (jsconfig),
compose commands as the page does (compose, mamba_ratio), keep and load the generated recipes per
revision (kept), and show what a new revision changes (sync)."""
