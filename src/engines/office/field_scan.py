"""Whether a Writer document can hold a field that prints where its file is, read from its bytes.

Imported by bridge.py. Walking a loaded document's text fields for one (whose server path the
bridge replaces) costs 2-3 ms of UNO round trips even when it has none, about a twentieth of a
one-page letter's conversion. Word and OpenDocument files say in their XML whether they hold
fields at all: where they provably hold none, the walk is skipped. Every doubt (another format, a
damaged or encrypted package, more than the scan reads, a part in an encoding whose bytes are not
ASCII's, a DTD) answers True, and the walk runs as before.

Every entry of a package is read, whatever its name: LibreOffice finds a Word part through the
package's relationships (a header may be `/hdr/h.bin`), not by where Word puts it.
"""

import re
import zipfile

MAX_PARTS = 2000
# What is read at most, all entries together (uncompressed): a one-page letter's package is a few
# dozen KiB, and past this the scan would cost about what the walk it saves does.
MAX_BYTES = 512 * 1024

WORD = {"docx", "docm", "dotx", "dotm"}
ODF = {"odt", "ott"}
FLAT_ODF = {"fodt"}

# A Word field is a w:fldSimple or a w:instrText between w:fldChar marks; Word splits a field's
# code over runs at will ("FILE" in one, "NAME \p" in the next), so any field at all counts.
# altChunk and subDoc bring in other documents, whose fields LibreOffice imports with them.
# Local names only: a package may bind WordprocessingML to any prefix.
WORD_FIELD = (b"instrText", b"fldSimple", b"fldChar", b"altChunk", b"subDoc")
# OpenDocument's fields that can print a file's place (text:file-name, text:template-name, under
# whatever prefix), and an encrypted package (its parts are not readable here).
ODF_FIELD = (b"file-name", b"template-name", b"encryption-data")
# Entity declarations could spell markup the words above do not show (character references).
DTD = (b"<!DOCTYPE", b"<!ENTITY")
XML_DECLARATION = re.compile(rb"<\?xml[^>]*?encoding\s*=\s*[\"']([A-Za-z0-9._-]+)")
# Encodings in which every ASCII character is its ASCII byte, so the words match as written.
ASCII_COMPATIBLE = {b"utf-8", b"utf8", b"us-ascii", b"ascii", b"iso-8859-1", b"latin1", b"iso-8859-15", b"windows-1252"}
UTF8_BOM = b"\xef\xbb\xbf"
# How XML in other encodings starts, as libxml2 (LibreOffice's parser) tells them: UTF-16 and
# UTF-32 with or without a byte order mark, EBCDIC's "<?xm", UTF-7's mark.
OTHER_ENCODING_STARTS = (
    b"\x00\x00\x00\x3c", b"\x3c\x00\x00\x00", b"\x00\x00\x3c\x00", b"\x00\x3c\x00\x00", b"\x00\x3c", b"\x3c\x00",
    b"\x00\x00\xfe\xff", b"\xfe\xff", b"\xff\xfe", b"\x4c\x6f\xa7\x94", b"\x2b\x2f\x76",
)


def may_show_file_name(path, source):
    """False only when the document provably holds no field that could print where it is."""
    try:
        if source in FLAT_ODF:
            with open(path, "rb") as stream:
                data = stream.read(MAX_BYTES + 1)
            return len(data) > MAX_BYTES or unclear(data, ODF_FIELD)
        if source in WORD:
            return package_has(path, WORD_FIELD)
        if source in ODF:
            return package_has(path, ODF_FIELD)
    except Exception:
        return True
    return True


def package_has(path, words):
    """Whether any entry of the package may hold one of the words (True for what cannot be read whole)."""
    with zipfile.ZipFile(path) as archive:
        infos = archive.infolist()
        if not infos or len(infos) > MAX_PARTS or sum(info.file_size for info in infos) > MAX_BYTES:
            return True
        # zipfile reads an entry no further than the size its header says (and checks its CRC),
        # so the sum above bounds what is inflated.
        return any(unclear(archive.read(info), words) for info in infos)


def unclear(data, words):
    """Whether these bytes may hold one of the words: they do, or they are not bytes where a search finds them."""
    if data.startswith(OTHER_ENCODING_STARTS):
        return True
    declared = XML_DECLARATION.match(data, len(UTF8_BOM) if data.startswith(UTF8_BOM) else 0, 512)
    if declared and declared.group(1).lower() not in ASCII_COMPATIBLE:
        return True
    # bytes.find, not a regular expression: a search of memory, ten times as fast on a 100 KiB part.
    return any(word in data for word in words) or any(word in data for word in DTD)
