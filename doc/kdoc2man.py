#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Turn the kernel-doc comments of public headers into man pages.

    kdoc2man.py OUTDIR HEADER...              write OUTDIR/NAME.3 for each entry
    kdoc2man.py --stamp FILE OUTDIR HEADER... the same, then touch FILE (meson)
    kdoc2man.py --install MANDIR HEADER...    the same into $DESTDIR/$MESON_INSTALL_PREFIX/MANDIR
    kdoc2man.py --check MAP HEADER...         fail if a public name has no comment

A kernel-doc comment opens with "/**", its first line names the entry
("name() - summary", "struct name - summary", "typedef name - ..."), then
"@param: text" lines, a blank line, free text, and "Return: text".  The
declaration that follows the comment becomes the SYNOPSIS.  Macros without
a comment of their own that are spelled in the ALIASES table get a page
that sources their family's page.  SEE ALSO names the library's overview
page and the other functions of the same header section (a banner comment
"/* ======== Name ... */" starts a section; a header without banners is one).
"""
import os
import re
import sys

# Kernel spellings documented together with the function they read from.
ALIASES = {
    "mp_bvec_iter_page": "mp_bvec_iter_bvec",
    "mp_bvec_iter_len": "mp_bvec_iter_bvec",
    "mp_bvec_iter_offset": "mp_bvec_iter_bvec",
    "bvec_iter_page": "bvec_iter_bvec",
    "bvec_iter_len": "bvec_iter_bvec",
    "bvec_iter_offset": "bvec_iter_bvec",
}

COMMENT = re.compile(r"/\*\*\n(.*?)\*/\n", re.S)
BANNER = re.compile(r"^/\* =+ (.*?) =+ \*/$", re.M)
# Headers of libzpool; every other header belongs to libbvec.
ZPOOL_HEADERS = {"zpool.h", "zram.h"}
HEAD = re.compile(r"^(?:(struct|enum|union|typedef)\s+)?([A-Za-z_][A-Za-z0-9_]*)(\(\))?\s+-\s+(.*)$")


def parse(path):
    """Yield (kind, name, summary, params, body, ret, decl, section) for each entry."""
    text = open(path, encoding="utf-8").read()
    banners = [(b.start(), b.group(1)) for b in BANNER.finditer(text)]
    for m in COMMENT.finditer(text):
        section = ""
        for pos, title in banners:
            if pos < m.start():
                section = title
        lines = [re.sub(r"^ ?\* ?", "", l) for l in m.group(1).splitlines()]
        if not lines or lines[0].startswith("DOC:"):
            continue
        head = HEAD.match(lines[0].strip())
        if not head:
            raise SystemExit(f"{path}: cannot parse kernel-doc head: {lines[0]!r}")
        kind, name, paren, summary = head.groups()
        kind = kind or ("function" if paren else "object")
        # Continuation lines belong to the section above them until a blank.
        params, body, ret, part = [], [], [], "body"
        for l in lines[1:]:
            pm = re.match(r"^@(\w+):\s*(.*)$", l)
            if pm:
                params.append([pm.group(1), pm.group(2)])
                part = "param"
            elif l.startswith("Return:"):
                ret.append(l[len("Return:"):].strip())
                part = "return"
            elif not l.strip():
                part = "body"
                body.append("")
            elif part == "return":
                ret.append(l.strip())
            elif part == "param":
                params[-1][1] += " " + l.strip()
            else:
                body.append(l.rstrip())
        rest = text[m.end():]
        if rest.startswith("#define"):
            decl = re.match(r"#define[^\n]*(?:\\\n[^\n]*)*", rest).group(0)
            decl = decl.split("\n")[0].rstrip(" \\")
        else:
            end = min(i for i in (rest.find("{"), rest.find(";")) if i >= 0)
            decl = rest[:end].strip()
            if kind in ("struct", "enum", "union"):
                block = rest[: rest.find("};") + 2] if "};" in rest else decl
                decl = block.strip()
            else:
                decl = re.sub(r"\bstatic inline\s+", "", decl)
                decl = re.sub(r"\bBVEC_API\s+", "", decl)
                decl = re.sub(r"\s+", " ", decl) + ";"
        yield kind, name, summary.strip(), params, body, ret, decl, section


def esc(s):
    return s.replace("\\", "\\e").replace("-", "\\-")


def man_page(header, kind, name, summary, params, body, ret, decl, siblings):
    inc = os.path.basename(os.path.dirname(header)) + "/" + os.path.basename(header)
    out = [f'.TH {name} 3 "" "libbvec" "libbvec Manual"',
           ".SH NAME", f"{esc(name)} \\- {esc(summary)}",
           ".SH SYNOPSIS", ".nf", f".B #include <{inc}>", ".PP"]
    out += [esc(l) for l in decl.splitlines()]
    out.append(".fi")
    if params:
        out.append(".SH ARGUMENTS")
        for p, d in params:
            out += [".TP", f".I {esc(p)}", esc(d)]
    text = "\n".join(body).strip()
    if text:
        out.append(".SH DESCRIPTION")
        for para in re.split(r"\n\s*\n", text):
            lines = para.splitlines()
            if all(l.lstrip().startswith("- ") or l.startswith("  ") for l in lines):
                out.append(".nf")
                out += [esc(l) for l in lines]
                out.append(".fi")
            else:
                out += [".PP", esc(" ".join(l.strip() for l in lines))]
    if ret:
        out += [".SH RETURN VALUE", esc(" ".join(ret))]
    lib = "libzpool" if os.path.basename(header) in ZPOOL_HEADERS else "libbvec"
    refs = [lib + " (7)"] + [s + " (3)" for s in siblings if s != name]
    out += [".SH SEE ALSO"] + [f".BR {esc(r)}" + ("," if i < len(refs) - 1 else "")
                               for i, r in enumerate(refs)]
    return "\n".join(out) + "\n"


def main(argv):
    if argv and argv[0] == "--check":
        symmap, headers = argv[1], argv[2:]
        documented = {e[1] for h in headers for e in parse(h)}
        documented |= set(ALIASES)
        exported = set(re.findall(r"^\s+([a-z_][a-z0-9_]*);", open(symmap).read(), re.M))
        inline = set()
        for h in headers:
            t = open(h).read()
            inline |= set(re.findall(r"^static inline [^(]*?\b([a-z_][a-z0-9_]*)\(", t, re.M))
            inline |= set(re.findall(r"^#define ([a-z_][a-z0-9_]*)\(", t, re.M))
        public = {n for n in exported | inline if not n.startswith("bvec__")}
        missing = sorted(public - documented)
        if missing:
            print("no kernel-doc comment for: " + " ".join(missing))
            return 1
        print(f"{len(public)} public names, all documented")
        return 0
    stamp = None
    if argv and argv[0] == "--stamp":
        stamp, argv = argv[1], argv[2:]
    if argv and argv[0] == "--install":
        prefix = os.environ.get("MESON_INSTALL_DESTDIR_PREFIX",
                                os.environ.get("MESON_INSTALL_PREFIX", "/usr/local"))
        argv = [os.path.join(prefix, argv[1])] + argv[2:]
    outdir, headers = argv[0], argv[1:]
    os.makedirs(outdir, exist_ok=True)
    for h in headers:
        entries = [e for e in parse(h) if e[0] in ("function", "object")]
        for kind, name, summary, params, body, ret, decl, section in entries:
            siblings = [e[1] for e in entries if e[7] == section]
            with open(os.path.join(outdir, name + ".3"), "w") as f:
                f.write(man_page(h, kind, name, summary, params, body, ret, decl, siblings))
    for alias, target in ALIASES.items():
        with open(os.path.join(outdir, alias + ".3"), "w") as f:
            f.write(f".so man3/{target}.3\n")
    if stamp:
        open(stamp, "w").close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
