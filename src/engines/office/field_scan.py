"""Whether a Writer document can hold a file-name field, read from the file's own XML.

Imported by bridge.py. Walking a loaded document's text fields for a FILENAME field (whose
server path the bridge replaces) costs 2-3 ms of UNO round trips even when it has none, about a
twentieth of a one-page letter's conversion. Word and OpenDocument files say in their XML whether
they hold fields at all: where they provably hold none, the walk is skipped. Every doubt (another
format, a damaged package, a part too large to read whole, a document that pulls in other
documents) answers True, and the walk runs as before.
"""

import re
import zipfile

MAX_PARTS = 10000
# What is read at most, all parts together; a package holding more is walked over UNO.
MAX_BYTES = 32 * 1024 * 1024

WORD = {"docx", "docm", "dotx", "dotm"}
ODF = {"odt", "ott"}
FLAT_ODF = {"fodt"}

# A Word field is a w:fldSimple or a w:instrText between w:fldChar marks; Word splits a field's
# code over runs at will ("FILE" in one, "NAME \p" in the next), so any field at all counts.
# altChunk and subDoc bring in other documents, whose fields LibreOffice imports with them.
# Local names only: a package may bind WordprocessingML to any prefix.
WORD_FIELD = re.compile(rb"instrText|fldSimple|fldChar|altChunk|subDoc")
# OpenDocument's file-name field (text:file-name, under whatever prefix).
ODF_FIELD = re.compile(rb"file-name")
WORD_PART = re.compile(r"^word/.+\.xml$")


def may_show_file_name(path, source):
    """False only when the document provably holds no field that could print where it is."""
    try:
        if source in FLAT_ODF:
            with open(path, "rb") as stream:
                data = stream.read(MAX_BYTES + 1)
            return len(data) > MAX_BYTES or ODF_FIELD.search(data) is not None
        if source in WORD:
            return package_has(path, WORD_PART.match, WORD_FIELD)
        if source in ODF:
            return package_has(path, lambda name: name.endswith(".xml"), ODF_FIELD)
    except Exception:
        return True
    return True


def package_has(path, wanted, pattern):
    """Whether a part the name test picks matches the pattern, True for what cannot be read whole."""
    with zipfile.ZipFile(path) as archive:
        infos = archive.infolist()
        if len(infos) > MAX_PARTS:
            return True
        parts = [info for info in infos if wanted(info.filename)]
        if not parts or sum(info.file_size for info in parts) > MAX_BYTES:
            return True
        for info in parts:
            with archive.open(info) as stream:
                data = stream.read(info.file_size + 1)
            # A part longer than its entry says (a forged size) is read no further.
            if len(data) > info.file_size or pattern.search(data):
                return True
    return False
