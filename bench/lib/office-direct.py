"""The office-warm bench's baseline: LibreOffice kept warm and driven directly over UNO, no service around it.

One process per LibreOffice instance (bench/office.ts starts as many as convd's pool has, as
convd runs one bridge process per instance: one Python process driving two instances from two
threads measured slower than convd, its calls serialised). It starts soffice with a profile of its
own and the settings convd gives its instances (start_office of convd's own bridge, so both sides
run the same LibreOffice the same way), then converts one document per stdin line: load, store as
PDF with writer_pdf_Export, close. That is the least a program can do to turn a docx into a PDF
with a warm LibreOffice.

Run under the Python that has LibreOffice's uno module (Debian: /usr/bin/python3). Arguments:
SOFFICE_BIN PROFILE_DIR [SETPRIV]. Prints {"ready": true, "startMs": ...} once soffice accepts
calls, then answers each stdin line {"input": ..., "output": ...} with {"ok": true} or
{"ok": false, "error": ...}. stdin closed: soffice is ended.
"""

import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "src", "engines", "office"))

import uno  # noqa: E402
from bridge import props, start_office, stop_office  # noqa: E402


def convert(desktop, source, output):
    document = desktop.loadComponentFromURL(uno.systemPathToFileUrl(source), "_blank", 0, props({"Hidden": True, "ReadOnly": True}))
    try:
        document.storeToURL(uno.systemPathToFileUrl(output), props({"FilterName": "writer_pdf_Export"}))
    finally:
        document.close(True)


def main():
    soffice, profile = sys.argv[1], sys.argv[2]
    setpriv = sys.argv[3] if len(sys.argv) > 3 else None
    started = time.perf_counter()
    office, desktop = start_office(soffice, profile, setpriv)
    print(json.dumps({"ready": True, "startMs": (time.perf_counter() - started) * 1000}), flush=True)
    for line in sys.stdin:
        request = json.loads(line)
        try:
            convert(desktop, request["input"], request["output"])
            print(json.dumps({"ok": True}), flush=True)
        except Exception as error:  # reported; the bench marks the round invalid
            print(json.dumps({"ok": False, "error": str(error)}), flush=True)
    stop_office(office, desktop)


if __name__ == "__main__":
    main()
