"""What the office engine's second way changes in a document's flat OpenDocument file, between its
two `soffice --convert-to` runs (bridge.py convert_once): what an instance's bridge does in the
loaded document (without_server_paths, with_frames_in_text), done here on the file LibreOffice
wrote, which the second run reads.

Imported by bridge.py.
"""

import os
import re
import xml.etree.ElementTree as ElementTree

# A field that prints where its file is, as LibreOffice writes it in a flat OpenDocument file.
PLACE_FIELD = re.compile(r"<text:(file-name|template-name)\b([^>]*?)(/?)>")
FIXED_ATTRIBUTE = re.compile(r"\s+text:fixed=\"[^\"]*\"")

OFFICE = "{urn:oasis:names:tc:opendocument:xmlns:office:1.0}"
TEXT = "{urn:oasis:names:tc:opendocument:xmlns:text:1.0}"
DRAW = "{urn:oasis:names:tc:opendocument:xmlns:drawing:1.0}"
PARAGRAPHS = (TEXT + "p", TEXT + "h")
# Past these the frames stay where they are (the text is then Writer's body only, as before):
# the file is parsed whole, and each frame's move finds its place in its container's children.
MAX_FLAT_CHARS = 64 * 1024 * 1024
MAX_TEXT_BOXES = 1000


def without_directory(text, source):
    """The document's place on the server taken out of the flat file's text, as
    without_server_paths does in a loaded document: the directory wherever it is written (a
    field's text, a formula's cached result), and every file-name and template-name field fixed as
    written, so that the next run does not print its own directory instead. The directory is
    convd's (letters, digits, - and _): written the same in XML and in a URL."""
    directory = os.path.dirname(source) + "/"
    text = text.replace("file://" + directory, "").replace(directory, "")
    return PLACE_FIELD.sub(lambda m: '<text:%s%s text:fixed="true"%s>' % (m.group(1), FIXED_ATTRIBUTE.sub("", m.group(2)), m.group(3)), text)


def with_frames_in_text(text):
    """The flat file with each text frame's paragraphs and tables moved after the paragraph it is
    anchored in, one anchored to the page (or in no paragraph) to the end of the text: Writer's
    text export writes the body only, and left a business card's every word out. The text as it
    was where it is not a text with frames, too large, has too many frames, or does not parse."""
    if len(text) > MAX_FLAT_CHARS:
        return text
    try:
        root = ElementTree.fromstring(text)
    except (ElementTree.ParseError, MemoryError):
        return text
    body = root.find(OFFICE + "body/" + OFFICE + "text")
    boxes = list(body.iter(DRAW + "text-box")) if body is not None else []
    if not boxes or len(boxes) > MAX_TEXT_BOXES:
        return text
    # ElementTree knows no parents: one map of the whole body, kept up to date as content moves.
    parents = {child: parent for parent in body.iter() for child in parent}
    for box in boxes:
        move_out(body, box, parents)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ElementTree.tostring(root, encoding="unicode")


def move_out(body, box, parents):
    """One text box's content out of its frame, which goes (its picture, its shape: nothing of them
    is text). `parents` (child -> parent) is updated for what moves."""
    frame = parents.get(box)
    holder = parents.get(frame) if frame is not None else None
    if holder is None:
        return
    content = list(box)
    remove_keeping_tail(holder, frame)
    del parents[frame]
    anchor = holder
    while anchor is not None and anchor.tag not in PARAGRAPHS:
        anchor = parents.get(anchor)
    # In another frame's box: that box's content has moved, or moves later; the end of the text.
    inside_box = anchor is not None and any(ancestor.tag == DRAW + "text-box" for ancestor in ancestors(anchor, parents))
    if anchor is None or inside_box:
        container, at = body, len(body)
    else:
        container = parents[anchor]
        at = list(container).index(anchor) + 1
    for offset, element in enumerate(content):
        container.insert(at + offset, element)
        parents[element] = container


def ancestors(element, parents):
    while element in parents:
        element = parents[element]
        yield element


def remove_keeping_tail(parent, child):
    """`child` out of `parent`, the text after it kept where it was."""
    index = list(parent).index(child)
    if child.tail:
        if index > 0:
            before = parent[index - 1]
            before.tail = (before.tail or "") + child.tail
        else:
            parent.text = (parent.text or "") + child.tail
    parent.remove(child)
