#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Seeds of fuzz_config from the configurations the project really uses.

    tests/fuzz/gen_config_seeds.py OUTDIR

Writes one file per configuration (a mode byte, 0 or 1: a load, or a load
and a reload, then the JSON text; fuzz_config.c): deploy/etc/isergwd.json, the JSON
examples of docs/configuration.md, and the isergwd configurations the
integration tests write (the here-documents of tests/integration/*.sh that
start with '{', with the shell's expansions replaced by plausible values:
addresses, ports, paths, names). Texts that are not JSON once expanded are
left out.
"""
import json
import pathlib
import re
import sys

SRC = pathlib.Path(__file__).resolve().parents[2]

VALUES = [  # (variable name pattern, value)
    (r"PORT", "3260"), (r"ADDR2", "127.0.0.2"), (r"ADDR|^P$|HOST", "127.0.0.1"),
    (r"IQN|^C\d|^T\d?$", "iqn.2026-11.org.isergw:%s"),
    (r"SCRATCH|DIR|SHARED|^S$", "/tmp/isergw-test"), (r"USER", "user1"), (r"SECRET|^S\d", "secret-%s-12345"),
    (r"LEVEL", "info"), (r"SIZE", "16M"), (r"INIT", "iqn.2026-11.org.example:h"),
]


# what a shell variable holding a piece of JSON holds (by its name)
FRAGMENTS = {
    "portals": '{ "url": "tcp://127.0.0.1:3260" }',
    "luns": '{ "lun": 0, "path": "/tmp/isergw-test/l0.img", "size": "1M" }',
}


def value(name, default=None):
    if default is not None:
        return default
    for pat, v in VALUES:
        if re.search(pat, name):
            return v.replace("%s", name.lower())
    return "1"


def expand(text):
    text = re.sub(r"\$\{([A-Za-z_][A-Za-z0-9_]*):-([^}]*)\}", lambda m: value(m.group(1), m.group(2)), text)
    text = re.sub(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}", lambda m: "$" + m.group(1), text)
    text = re.sub(r",\s*\$\([^()]*\)", "", text)           # a fragment a shell function adds
    text = re.sub(r"\$\([^()]*\)", "x", text)
    out = []
    for line in text.split("\n"):
        res, pos = "", 0
        for m in re.finditer(r"\$([A-Za-z_][A-Za-z0-9_]*|[0-9])", line):
            res += line[pos:m.start()]
            quoted = res.count('"') % 2 == 1
            name = m.group(1)
            if quoted:
                res += "127.0.0.1" if name.isdigit() and line[m.end():m.end() + 1] == ":" else value(name)
            elif name in FRAGMENTS:
                frag = FRAGMENTS[name]
                res += frag if re.search(r"\[\s*$", res) else "[ " + frag + " ]"
            elif re.search(r"\"alua_lease\":\s*$", res):
                res += "true"
            elif re.search(r"[:\[,]\s*$", res):
                res += "1"                                     # a number
            else:
                res += ""                                      # a fragment of JSON: none
            pos = m.end()
        out.append(res + line[pos:])
    return "\n".join(out)


def heredocs(path):
    lines = path.read_text(errors="replace").splitlines()
    i = 0
    while i < len(lines):
        m = re.search(r"<<-?\s*'?([A-Z]+)'?\s*$", lines[i])
        if m and "python" not in lines[i]:
            tag, body = m.group(1), []
            i += 1
            while i < len(lines) and lines[i].strip() != tag:
                body.append(lines[i])
                i += 1
            text = "\n".join(body).strip()
            if text.startswith("{"):
                yield text
        i += 1


def main():
    out = pathlib.Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    seen = set()
    texts = [("deploy-isergwd", (SRC / "deploy/etc/isergwd.json").read_text())]
    doc = (SRC / "docs/configuration.md").read_text()
    for k, m in enumerate(re.finditer(r"```json\n(.*?)```", doc, re.S)):
        texts.append(("docs-configuration-%d" % k, m.group(1)))
    for sh in sorted((SRC / "tests/integration").glob("*.sh")):
        for k, t in enumerate(heredocs(sh)):
            texts.append(("it-%s-%d" % (sh.stem, k), expand(t)))
    n = 0
    for name, text in texts:
        try:
            j = json.loads(text)
        except ValueError:
            continue
        if not isinstance(j, dict) or text in seen or "api_tokens" in j:
            continue
        seen.add(text)
        # reloads for the ones with targets, loads for the others
        mode = b"\x01" if "targets" in j else b"\x00"
        (out / name).write_bytes(mode + text.encode())
        n += 1
        if name.startswith("deploy"):
            (out / (name + "-load")).write_bytes(b"\x00" + text.encode())
            n += 1
    print("%d seeds in %s" % (n, out))


if __name__ == "__main__":
    main()
