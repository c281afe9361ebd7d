#!/usr/bin/env python3
"""scripts/cloud-shapes.py: the key paths and JSON types of a JSON answer.

    scripts/cloud-shapes.py ANSWER.json > httpapi/testdata/cloudshapes/NAME.txt

Prints one line per key path of the document, with the JSON types seen
there ("plants[].installation.peakPower number"; array elements as "[]";
several types joined by "|"), sorted. httpapi's TestCloudShapes checks
that plantd's answers have every path of these lists with a compatible
type. The lists in testdata are derived this way from answers of the cloud
API that a public client's tests hold (SolarNetwork's SMA integration,
solarnet/cloud-integrations/src/test/resources/.../sma-*.json): only the
paths and types are kept, none of the answers' values or text.
"""
import json
import sys

TYPES = {dict: "object", list: "array", str: "string", bool: "boolean", type(None): "null", int: "number", float: "number"}


def walk(v, path, out):
    out.setdefault(path, set()).add(TYPES[type(v)])
    if isinstance(v, dict):
        for k, x in v.items():
            walk(x, f"{path}.{k}" if path else k, out)
    elif isinstance(v, list):
        for x in v:
            walk(x, path + "[]", out)


def main():
    with open(sys.argv[1]) as f:
        doc = json.load(f)
    out = {}
    walk(doc, "", out)
    for path in sorted(p for p in out if p):
        print(path, "|".join(sorted(out[path])))


if __name__ == "__main__":
    main()
