#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""
The seed corpora and dictionaries of fuzz_rest and fuzz_http (isergw-api):

    tests/fuzz/gen_api_seeds.py        # rewrites corpus/fuzz_{rest,http}/, dict/fuzz_{rest,http}.dict

mgmt/openapi.json has no examples, so a request of every path and method of
it is made with a body built from its request schema (every property with
a value of its type, enum or the fake document's names: the full object,
and the required members alone), plus sequences against the fake agent's
document (tests/fuzz/fake_api.c): a POST, then a GET, a PATCH and a
DELETE of what it made, with and without If-Match; then the requests the
api tests send that are not plain resource calls (tests/integration/
api_security.sh, api_body_utf8.sh, api_abuse.sh: a path that is not
UTF-8, '//api/v1', bodies that are not JSON, two Authorization headers,
an over-long Content-Length). The dictionaries: the paths' segments, every
property name of the schemas, the header names and the two tokens.
"""
import json
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(os.path.dirname(HERE))
ADMIN = "isergw_admin_AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8"
VIEWER = "isergw_viewer_QEFCQ0RFRkdISUpLTE1OT1BRUlNUVVZXWFlaW1xdXl8"
AUTH = "Authorization: Bearer " + ADMIN
AUTH_RO = "Authorization: Bearer " + VIEWER

# names in the fake agent's document (fake_api.c FZ_CFG)
PARAMS = {
    "name": "n1", "iqn": "iqn.2026-11.org.isergw:t1", "lun": "0", "id": "g7",
    "initiator": "iqn.1994-05.com.redhat:h1", "rel_port_id": "1", "tsih": "1",
}
# values by property name (otherwise by type)
VALUES = {
    "iqn": "iqn.2026-11.org.isergw:fz", "initiator": "iqn.1994-05.com.redhat:fz",
    "path": "/var/lib/isergw/fz.img", "url": "tcp://10.0.0.3:3260", "user": "fzuser",
    "secret": "fzsecret1234", "owner": "n2", "drained": True, "alias": "fz",
    "device_group": "dg1", "size": "64M", "block_size": 4096, "name": "n3",
    "preferred_owner": "n1", "node": "n2", "rel_port_id": 7, "tpg_id": 3,
    "backend_initiator": "iqn.2026-11.org.isergw:backend", "max_transfer": "1M",
    "backend_read_chunk": "256K", "serial": "fz0001", "vendor": "ISERGW", "product": "FZ",
}


def deref(doc, s):
    seen = 0
    while isinstance(s, dict) and "$ref" in s and seen < 10:
        node = doc
        for part in s["$ref"].lstrip("#/").split("/"):
            node = node[part]
        s = node
        seen += 1
    return s


def instance(doc, s, key="", full=True, depth=0):
    s = deref(doc, s)
    if key in VALUES and depth > 0:
        return VALUES[key]
    if "enum" in s:
        return s["enum"][0]
    if "oneOf" in s or "anyOf" in s:
        return instance(doc, (s.get("oneOf") or s.get("anyOf"))[0], key, full, depth)
    t = s.get("type")
    if isinstance(t, list):
        t = [x for x in t if x != "null"][0]
    if t == "object" or "properties" in s:
        out = {}
        req = s.get("required", [])
        for k, v in s.get("properties", {}).items():
            v = deref(doc, v)
            if v.get("readOnly"):
                continue
            if full or k in req:
                if depth > 3:
                    continue
                out[k] = instance(doc, v, k, full, depth + 1)
        return out
    if t == "array":
        return [instance(doc, s.get("items", {}), key, full, depth + 1)] if full else []
    if t == "integer":
        return s.get("minimum", 1) if s.get("minimum", 1) > 0 else 1
    if t == "boolean":
        return True
    if t == "string":
        return "fz"
    return None


def req(method, path, headers=(), body=None, agent=None):
    lines = [method + " " + path]
    lines += list(headers)
    if agent is not None:
        lines.append("@agent " + agent)
    text = "\n".join(lines) + "\n\n"
    if body is not None:
        text += body if isinstance(body, str) else json.dumps(body)
    return text


def seq(*reqs):
    return "\n%%\n".join(reqs)


def rest_seeds(doc):
    seeds = {}
    for path, item in doc["paths"].items():
        for method, op in item.items():
            if method not in ("get", "put", "post", "patch", "delete"):
                continue
            p = "/api/v1" + path
            if path.startswith("/device-groups/"):
                p = p.replace("{name}", "dg1")
            for k, v in PARAMS.items():
                p = p.replace("{" + k + "}", v)
            name = (method + path).replace("/", "-").replace("{", "").replace("}", "")
            rb = op.get("requestBody")
            hdr = [AUTH] if method != "get" else [AUTH_RO]
            if rb:
                schema = list(rb["content"].values())[0]["schema"]
                full = instance(doc, schema, full=True)
                mini = instance(doc, schema, full=False)
                hdr = hdr + ["Content-Type: application/json"]
                seeds[name] = req(method.upper(), p, hdr, full)
                if mini != full:
                    seeds[name + "-required"] = req(method.upper(), p, hdr, mini)
            else:
                seeds[name] = req(method.upper(), p, hdr)
    t = "/api/v1/targets/iqn.2026-11.org.isergw:fz"
    ct = "Content-Type: application/json"
    seeds["seq-target"] = seq(
        req("POST", "/api/v1/targets", [AUTH, ct], {"iqn": "iqn.2026-11.org.isergw:fz",
                                                      "luns": [{"path": "/a"}]}),
        req("GET", t, [AUTH_RO]),
        req("PATCH", t, [AUTH, ct, 'If-Match: "g8"'], {"alias": "x", "chap": None}),
        req("POST", t + "/luns", [AUTH, ct], {"path": "/b", "size": "1G"}),
        req("PATCH", t + "/luns/1", [AUTH, ct], {"readonly": True}),
        req("DELETE", t + "/luns/1", [AUTH, "If-Match: *"]),
        req("DELETE", t, [AUTH]))
    t1 = "/api/v1/targets/iqn.2026-11.org.isergw:t1"
    seeds["seq-lun"] = seq(
        req("POST", t1 + "/luns", [AUTH, ct], {"lun": 5, "path": "/dev/sdc", "device_group": "dg2"}),
        req("GET", t1 + "/luns/5", [AUTH_RO]),
        req("PATCH", t1 + "/luns/5", [AUTH, ct, 'If-Match: "g8"'], {"size": "2G", "serial": None}),
        req("DELETE", t1 + "/luns/5", [AUTH, 'If-Match: "g9"']))
    seeds["seq-lun-by-place"] = seq(
        req("POST", "/api/v1/targets/iqn.2026-11.org.isergw:t2/luns", [AUTH, ct], {"path": "/x"}),
        req("DELETE", "/api/v1/targets/iqn.2026-11.org.isergw:t2/luns/0", [AUTH]))
    seeds["seq-acl"] = seq(
        req("POST", t1 + "/acls", [AUTH, ct], {"initiator": "iqn.1994-05.com.redhat:h2",
                                                "chap": {"user": "h2", "secret": "hostsecret34"}}),
        req("PATCH", t1 + "/acls/iqn.1994-05.com.redhat:h2", [AUTH, ct], {"chap": None}),
        req("GET", t1 + "/acls", [AUTH_RO]),
        req("DELETE", t1 + "/acls/iqn.1994-05.com.redhat:h2", [AUTH]))
    seeds["seq-portal"] = seq(
        req("POST", "/api/v1/nodes/n3/portals", [AUTH, ct], {"url": "iser://10.0.0.3"}),
        req("PATCH", "/api/v1/nodes/n3/portals/3", [AUTH, ct], {"url": "tcp://10.0.0.3:3261"}),
        req("GET", "/api/v1/port-groups", [AUTH_RO]),
        req("DELETE", "/api/v1/nodes/n3/portals/3", [AUTH]))
    seeds["seq-drain"] = seq(
        req("PATCH", "/api/v1/nodes/n1?force=true", [AUTH, ct], {"drained": True}),
        req("GET", "/api/v1/nodes", [AUTH_RO]),
        req("PATCH", "/api/v1/nodes/n1", [AUTH, ct, 'If-Match: "g8"'], {"drained": False}),
        req("PATCH", "/api/v1/device-groups/dg1", [AUTH, ct], {"owner": "n3"}),
        req("GET", "/api/v1/device-groups", [AUTH_RO]),
        req("GET", "/api/v1/operations/g9", [AUTH_RO]))
    seeds["seq-chap-config"] = seq(
        req("PUT", "/api/v1/discovery-chap", [AUTH, ct], {"user": "d2", "secret": "discsecret34"}),
        req("GET", "/api/v1/config", [AUTH_RO]),
        req("DELETE", "/api/v1/discovery-chap", [AUTH]),
        req("GET", "/api/v1/config", [AUTH_RO]))
    # the agent perturbed (fake_api.c: 8 timeout, 9 refused, 10 a refusal, 11 a 202,
    # 12 no payload, 13 bytes as the reply, 14 the cluster moved on, 15 a wrong payload)
    seeds["agent-stale-retry"] = req("POST", t1 + "/luns", [AUTH, ct], {"path": "/r"},
                                     agent="\x0e\x0e\x0e")
    seeds["agent-202"] = req("PATCH", t1, [AUTH, ct], {"alias": "slow"}, agent="\x00\x0b")
    seeds["agent-refusals"] = seq(
        req("PUT", "/api/v1/config", [AUTH, ct], instance(doc, {"$ref": "#/components/schemas/Config"}),
            agent="\x00\x3a\x04"),
        req("PATCH", "/api/v1/device-groups/dg1", [AUTH, ct], {"owner": "n9"}, agent="\x4a\x07"),
        req("GET", "/api/v1/targets", [AUTH_RO], agent="\x08"),
        req("GET", "/api/v1/cluster", [AUTH_RO], agent="\x0d\x04\x08\x00\x12\x00"),
        req("GET", "/api/v1/targets/iqn.2026-11.org.isergw:t1/luns/1", [AUTH_RO], agent="\x0f"),
        req("DELETE", t1 + "/luns/0", [AUTH], agent="\x9a"))
    # what the api tests send (tests/integration/api_security.sh, api_body_utf8.sh)
    seeds["tests-odd"] = seq(
        req("GET", "/api/v1/targets/%ff%fe", [AUTH_RO]),
        req("GET", "//api/v1/targets", [AUTH_RO]),
        req("GET", "/api/v1/x", [AUTH_RO]),
        req("POST", "/api/v1/targets", [AUTH, ct], "\r"),
        req("POST", "/api/v1/targets", [AUTH, ct], " \n"),
        req("POST", "/api/v1/targets", [AUTH, ct], {"iqn": "x"}),
        req("PATCH", t1, [AUTH, ct], '{"alias": "\xff"}'),
        req("POST", "/api/v1/targets", [AUTH_RO, ct], {}))
    seeds["tests-odd-2"] = seq(
        req("GET", "/api/v1/cluster", [AUTH, AUTH_RO]),
        req("GET", "/api/v1/cluster", ["Authorization: Bearer isergw_admin_x"]),
        req("POST", "/api/v1/targets", [AUTH, "Content-Length: 99999999999"], "{}"),
        req("PATCH", t1, [AUTH, ct, "If-Match: W/\"g7\""], {}),
        req("DELETE", "/api/v1/sessions/1?grace_s=30", [AUTH]),
        req("GET", "/metrics", [AUTH_RO]),
        req("GET", "/readyz", []),
        req("BREW", "/api/v1/cluster", [AUTH]))
    return seeds


def str8(b):
    b = b.encode("latin-1") if isinstance(b, str) else b
    return bytes([len(b)]) + b


def str16(b):
    b = b.encode("latin-1") if isinstance(b, str) else b
    return struct.pack("<H", len(b)) + b


def http_req(conn, method, url, headers=(), chunks=(), upto=255, version=0, auth=None):
    out = bytes([5 if auth is not None else 1, conn])
    if auth is not None:
        out += bytes([auth])
    out += str8(method) + str16(url) + bytes([version])
    out += bytes([len(headers)])
    for kind, k, v in headers:
        out += bytes([kind]) + str8(k) + (bytes([255]) if v is None else str8(v))
    out += bytes([len(chunks)])
    for c in chunks:
        if isinstance(c, int):
            out += bytes([0x80 | (c - 1)])
        else:
            c = c.encode() if isinstance(c, str) else c
            out += bytes([0]) + struct.pack("<H", len(c)) + c
    return out + bytes([upto])


def http_seeds():
    H, A = 0, 1
    s = {}
    opn = lambda peer: bytes([0, peer])
    ct = (H, "Content-Type", "application/json")
    s["probes"] = bytes([0]) + opn(0) + http_req(0, "GET", "/healthz") + \
        http_req(0, "HEAD", "/readyz") + http_req(0, "GET", "/metrics", auth=1) + \
        http_req(0, "POST", "/metrics", auth=0)
    s["v1-chunked-post"] = bytes([0]) + opn(1) + http_req(
        0, "POST", "/api/v1/targets", [ct], ['{"iqn":"iqn.2026-11.org', '.isergw:h","luns":[]}'],
        auth=0) + http_req(0, "DELETE", "/api/v1/targets/iqn.2026-11.org.isergw:h", auth=0)
    s["body-over-cap"] = bytes([0]) + opn(0) + http_req(0, "PUT", "/api/v1/config", [ct], [32, 2],
                                                          auth=0)
    s["body-drain-close"] = bytes([0]) + opn(0) + http_req(0, "PUT", "/api/v1/config", [ct],
                                                             [128, 2], auth=0)
    s["content-length"] = bytes([0]) + opn(0) + http_req(
        0, "POST", "/api/v1/targets", [(H, "Content-Length", "1048577")], ["{}"], auth=0)
    s["two-authz"] = bytes([0]) + opn(0) + http_req(
        0, "GET", "/api/v1/cluster", [(H, "authorization", "Bearer x")], auth=0)
    s["no-tokens"] = bytes([1]) + opn(0) + http_req(0, "GET", "/api/v1/cluster") + \
        http_req(0, "GET", "/metrics")
    s["not-a-token-method"] = bytes([0]) + opn(0) + http_req(0, "G(T", "/healthz") + opn(0) + \
        http_req(1, "", "/x", version=2)
    s["conn-limits"] = bytes([(1 << 3) | (1 << 5)]) + opn(0) + opn(0) + opn(0) + opn(1) + opn(1) + \
        opn(4) + http_req(1, "GET", "/api/v1/nodes", upto=0, auth=1) + opn(0) + opn(2) + \
        http_req(3, "GET", "/healthz") + bytes([3, 0])
    s["half-then-more"] = bytes([0x78]) + opn(0) + opn(4) + http_req(
        0, "PATCH", "/api/v1/nodes/n2", [ct, (A, "force", "true")], ['{"drai', 'ned":true}'],
        upto=1, auth=0) + http_req(1, "GET", "/api/v1/device-groups/dg1", auth=1) + \
        bytes([2, 0, 255])
    s["answered-then-closed"] = bytes([0x78]) + opn(0) + http_req(
        0, "GET", "/api/v1/nodes/n1", upto=254, auth=1) + bytes([3, 0]) + opn(1) + http_req(
        0, "PATCH", "/api/v1/device-groups/dg2", [ct], ['{"owner":"n1"}'], upto=254, auth=0) + \
        bytes([2, 0, 255])
    # libmicrohttpd 0.9.75's message for a request line it refused (api_abuse.sh sends one)
    s["mhd-log"] = bytes([0]) + bytes([6]) + str16(
        "Error processing request (HTTP response code is 400 (`<html><head><title>Bad Request"
        "</title></head><body>Bad Request</body></html>')). Closing connection.\n") + \
        bytes([6]) + str16("Failed to create worker inter-thread communication channel: x\n")
    s["args"] = bytes([0]) + opn(0) + http_req(
        0, "DELETE", "/api/v1/sessions/9", [(A, "grace_s", None), (A, "grace_s", "5")], auth=0) + \
        http_req(0, "PATCH", "/api/v1/nodes/n3", [ct, (A, "force", "yes")], ['{"drained":1}'],
                 auth=0)
    s["agent-faults"] = bytes([0]) + opn(0) + bytes([4, 3, 0x0a, 0x03, 0x0e]) + http_req(
        0, "POST", "/api/v1/targets/iqn.2026-11.org.isergw:t1/acls", [ct],
        ['{"initiator":"iqn.1994-05.com.redhat:x"}'], auth=0)
    s["no-agent"] = bytes([4]) + opn(0) + http_req(0, "GET", "/api/v1/cluster", auth=1) + \
        http_req(0, "GET", "/api/v1/openapi.json", auth=1)
    s["ipv6-reserve"] = bytes([0]) + opn(5) + opn(6) + http_req(
        0, "GET", "/api/v1/targets", upto=0, auth=1) + opn(7) + http_req(
        1, "GET", "/readyz") + http_req(2, "GET", "/api/v1/cluster", auth=1) + bytes([3, 0])
    return s


def dict_lines(doc, rest):
    words = set()
    for path in doc["paths"]:
        for seg in path.strip("/").split("/"):
            if not seg.startswith("{"):
                words.add(seg)
    words |= {"api", "v1", "healthz", "readyz", "metrics", "openapi.json", "g7", "g8", "n1",
              "n2", "n3", "dg1", "dg2", "iqn.2026-11.org.isergw:t1", "iqn.1994-05.com.redhat:h1",
              "force", "grace_s", "true", "false", "null"}

    def keys(o):
        if isinstance(o, dict):
            for k, v in o.items():
                if k == "properties":
                    words.update(v.keys())
                keys(v)
        elif isinstance(o, list):
            for v in o:
                keys(v)
    keys(doc["components"])
    out = ['"%s"' % w for w in sorted(words)]
    out += ['"\\"%s\\":"' % w for w in sorted(words) if w.replace("_", "").isalpha()]
    hdrs = ["Authorization", "Content-Type", "Content-Length", "If-Match", "Connection",
            "Transfer-Encoding", "Bearer ", "application/json", "W/\\\"g7\\\"", "\\\"g7\\\"", "*",
            "close", "HTTP/1.0", "HTTP/1.1", "GET", "HEAD", "POST", "PUT", "PATCH", "DELETE",
            "OPTIONS", "Bearer " + ADMIN, "Bearer " + VIEWER]
    out += ['"%s"' % h for h in hdrs]
    if rest:
        out += ['"\\x0a%%\\x0a"', '"@agent "', '"Authorization: Bearer %s"' % ADMIN,
                '"Authorization: Bearer %s"' % VIEWER]
    return "\n".join(out) + "\n"


def write(dirname, seeds, binary):
    os.makedirs(dirname, exist_ok=True)
    for f in os.listdir(dirname):
        os.unlink(os.path.join(dirname, f))
    for name, data in seeds.items():
        with open(os.path.join(dirname, name), "wb") as fh:
            # text seeds: the bytes as written (\xff stays one byte)
            fh.write(data if binary else data.encode("latin-1"))


def main():
    doc = json.load(open(os.path.join(SRC, "mgmt", "openapi.json")))
    write(os.path.join(HERE, "corpus", "fuzz_rest"), rest_seeds(doc), False)
    write(os.path.join(HERE, "corpus", "fuzz_http"), http_seeds(), True)
    os.makedirs(os.path.join(HERE, "dict"), exist_ok=True)
    with open(os.path.join(HERE, "dict", "fuzz_rest.dict"), "w") as fh:
        fh.write("# made by tests/fuzz/gen_api_seeds.py\n" + dict_lines(doc, True))
    with open(os.path.join(HERE, "dict", "fuzz_http.dict"), "w") as fh:
        fh.write("# made by tests/fuzz/gen_api_seeds.py\n" + dict_lines(doc, False))


if __name__ == "__main__":
    main()
