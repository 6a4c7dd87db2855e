"""Model text that tries to be markup, for the views that draw model text as Markdown (the rendered view):
HTML, links and images of every form, addresses GitHub-flavoured Markdown links by itself, entities that
decode into them, LaTeX that links, and text made to fool a reader that cuts code, math and tables
differently from Markdown's. None of it may become a tag, a link or a request."""

from __future__ import annotations

# Markup in every field of the app (tests/browser/test_security.py plants these in prompts, tokens, labels).
BASIC = [
    "<script>window.__xss=1;alert(1)</script>",
    '<img src=x onerror="window.__xss=2;alert(2)">',
    '<a href="javascript:window.__xss=3">click me</a>',
    "[link](javascript:window.__xss=4) ![img](http://evil.example/pixel.png)",
    '# Heading $x^2$ **bold** <svg onload="window.__xss=5">',
    "\x1b[31mred\x1b[0m bell\x07 \u202eevil\u202c zero\u200bwidth",
    '<iframe src="http://evil.example/frame"></iframe>',
    '" onmouseover="window.__xss=6" x="',
]
# ...and the forms a Markdown renderer would turn into links, images or tags.
PAYLOADS = [
    *BASIC,
    "# Heading [x](javascript:alert(1))",
    "<script>alert(1)</script><img src=x onerror=alert(2)>",
    "[ref link][r]\n\n[r]: http://evil.example/ref\n\n[r]",
    "![ref image][i]\n\n[i]: http://evil.example/i.png",
    "<http://evil.example/autolink> <mailto:a@evil.example> <a@evil.example>",
    "bare http://evil.example/x, www.evil.example and WWW.EVIL.EXAMPLE, mail a.b+c@evil.example",
    "entities: &lt;img src=x onerror=alert(1)&gt; www&#46;evil.example http&#58;//evil.example a&#64;evil.io",
    "footnote[^1]\n\n[^1]: http://evil.example/fn",
    ":red[coloured] :material/home: [x]: http://evil.example",
    "<!-- comment --> <?php echo 1; ?> <![CDATA[x]]> <div>\n\n[in html](http://evil.example)\n\n</div>",
    "`a`http://x`[a](javascript:alert(1))",
    "`a`www.evil.example`[b](http://evil.example)",
    "a@b.co`[c](http://evil.example)`",
    "\\(x\\)$y$ [d](http://evil.example) $z$",
    "$a$$b$ [e](http://evil.example)",
    "| a | b |\n|---|---|\n| `x|[f](http://evil.example)` | $|y|$ [g](http://evil.example) |",
    "- item\n  ```\n  [h](http://evil.example)\n- next [i](http://evil.example)\n",
    "> ~~~\n> [j](http://evil.example)\n\n[k](http://evil.example)",
    "```\nunclosed [l](http://evil.example)",
    "$$\nx\n\n[m](http://evil.example)\n$$",
    "$\\href{javascript:alert(1)}{click}$ $\\url{http://evil.example}$ $\\includegraphics{http://e/x.png}$",
    "\\[\\htmlClass{x}{y}\\] [n](http://evil.example)",
    "    indented [o](http://evil.example) <b>",
    "line\\\n[p](http://evil.example)\\",
    "[q](<http://evil.example> 'title') [r]( http://evil.example )",
    "![s](data:image/png;base64,AAAA) [t](//evil.example)",
    "x\r[u](http://evil.example)\r\n<b>\x00",
]
