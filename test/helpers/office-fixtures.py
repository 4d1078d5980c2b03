"""Makes the office suites' fixtures with LibreOffice itself, in one start of soffice.

Usage: office-fixtures.py BRIDGE_DIR SOFFICE_BIN OUT_DIR MARKER
Writes, from flat OpenDocument files made here (text, spreadsheet, presentation, drawing, each
holding the marker text), every office source format the engine reads: docx, doc, odt, rtf, xlsx,
xls, ods, pptx, ppt, odp, their templates (ott, dotx, dot, ots, xltx, xlt, otp, potx, pot) and
flat OpenDocument kin (fodt, fods, fodp), a drawing (odg, otg, fodg: the marker in a text box);
a three-page text (pages.docx: "PAGE-n-MARKER" on page n); and password-protected copies in
OpenDocument (protected.odt, protected.ods: password "sesame"; LibreOffice 7.4 does not encrypt
OOXML it writes). Prints the files made.
"""

import os
import sys

sys.path.insert(0, sys.argv[1])
import bridge  # noqa: E402  (the engine's own bridge: the same way to start and talk to soffice)
import uno  # noqa: E402

soffice, out, marker = sys.argv[2], sys.argv[3], sys.argv[4]

OFFICE_NS = (
    'xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" '
    'xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" '
    'xmlns:table="urn:oasis:names:tc:opendocument:xmlns:table:1.0" '
    'xmlns:draw="urn:oasis:names:tc:opendocument:xmlns:drawing:1.0" '
    'xmlns:presentation="urn:oasis:names:tc:opendocument:xmlns:presentation:1.0" '
    'xmlns:svg="urn:oasis:names:tc:opendocument:xmlns:svg-compatible:1.0" '
    'xmlns:style="urn:oasis:names:tc:opendocument:xmlns:style:1.0" '
    'xmlns:fo="urn:oasis:names:tc:opendocument:xmlns:xsl-fo-compatible:1.0" '
    'office:version="1.2"'
)

TEXT = """<?xml version="1.0" encoding="UTF-8"?>
<office:document %s office:mimetype="application/vnd.oasis.opendocument.text">
<office:body><office:text>
<text:h text:outline-level="1">Quarterly report</text:h>
<text:p>The marker: %s.</text:p>
<text:p>Second paragraph, Zürich and Ωmega.</text:p>
</office:text></office:body></office:document>
""" % (OFFICE_NS, marker)

PAGES = """<?xml version="1.0" encoding="UTF-8"?>
<office:document %s office:mimetype="application/vnd.oasis.opendocument.text">
<office:automatic-styles><style:style style:name="Break" style:family="paragraph"><style:paragraph-properties fo:break-before="page"/></style:style></office:automatic-styles>
<office:body><office:text>
<text:p>PAGE-1-MARKER</text:p>
<text:p text:style-name="Break">PAGE-2-MARKER</text:p>
<text:p text:style-name="Break">PAGE-3-MARKER</text:p>
</office:text></office:body></office:document>
""" % OFFICE_NS

# The first column wide enough for the marker: a PDF shows only what fits in a cell.
SHEET = """<?xml version="1.0" encoding="UTF-8"?>
<office:document %s office:mimetype="application/vnd.oasis.opendocument.spreadsheet">
<office:automatic-styles><style:style style:name="Wide" style:family="table-column"><style:table-column-properties style:column-width="6cm"/></style:style></office:automatic-styles>
<office:body><office:spreadsheet><table:table table:name="Data">
<table:table-column table:style-name="Wide"/><table:table-column/>
<table:table-row><table:table-cell office:value-type="string"><text:p>name</text:p></table:table-cell><table:table-cell office:value-type="string"><text:p>value</text:p></table:table-cell></table:table-row>
<table:table-row><table:table-cell office:value-type="string"><text:p>%s</text:p></table:table-cell><table:table-cell office:value-type="float" office:value="42"><text:p>42</text:p></table:table-cell></table:table-row>
<table:table-row><table:table-cell office:value-type="string"><text:p>Zürich</text:p></table:table-cell><table:table-cell office:value-type="float" office:value="7"><text:p>7</text:p></table:table-cell></table:table-row>
</table:table></office:spreadsheet></office:body></office:document>
""" % (OFFICE_NS, marker)

SLIDES = """<?xml version="1.0" encoding="UTF-8"?>
<office:document %s office:mimetype="application/vnd.oasis.opendocument.presentation">
<office:body><office:presentation>
<draw:page draw:name="one"><draw:frame svg:x="2cm" svg:y="2cm" svg:width="20cm" svg:height="3cm"><draw:text-box><text:p>%s</text:p></draw:text-box></draw:frame></draw:page>
<draw:page draw:name="two"><draw:frame svg:x="2cm" svg:y="2cm" svg:width="20cm" svg:height="3cm"><draw:text-box><text:p>Second slide</text:p></draw:text-box></draw:frame></draw:page>
</office:presentation></office:body></office:document>
""" % (OFFICE_NS, marker)

# One page of drawing: the marker in a text box.
DRAWING = """<?xml version="1.0" encoding="UTF-8"?>
<office:document %s office:mimetype="application/vnd.oasis.opendocument.graphics">
<office:body><office:drawing>
<draw:page draw:name="one"><draw:frame svg:x="2cm" svg:y="2cm" svg:width="16cm" svg:height="3cm"><draw:text-box><text:p>%s</text:p></draw:text-box></draw:frame></draw:page>
</office:drawing></office:body></office:document>
""" % (OFFICE_NS, marker)

FILTERS = {
    "docx": "MS Word 2007 XML", "doc": "MS Word 97", "odt": "writer8", "rtf": "Rich Text Format",
    "xlsx": "Calc MS Excel 2007 XML", "xls": "MS Excel 97", "ods": "calc8",
    "pptx": "Impress MS PowerPoint 2007 XML", "ppt": "MS PowerPoint 97", "odp": "impress8",
    # Templates, flat (single XML file) OpenDocument and drawings.
    "ott": "writer8_template", "dotx": "MS Word 2007 XML Template", "dot": "MS Word 97 Vorlage",
    "fodt": "OpenDocument Text Flat XML",
    "ots": "calc8_template", "xltx": "Calc MS Excel 2007 XML Template", "xlt": "MS Excel 97 Vorlage/Template",
    "fods": "OpenDocument Spreadsheet Flat XML",
    "otp": "impress8_template", "potx": "Impress MS PowerPoint 2007 XML Template", "pot": "MS PowerPoint 97 Vorlage",
    "fodp": "OpenDocument Presentation Flat XML",
    "odg": "draw8", "otg": "draw8_template", "fodg": "OpenDocument Drawing Flat XML",
}


def write(name, content):
    path = os.path.join(out, name)
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(content)
    return path


def store(desktop, source, name, extension, password=None):
    document = desktop.loadComponentFromURL(uno.systemPathToFileUrl(source), "_blank", 0, bridge.props({"Hidden": True}))
    try:
        options = {"FilterName": FILTERS[extension]}
        if password:
            options["Password"] = password
        target = os.path.join(out, name)
        document.storeToURL(uno.systemPathToFileUrl(target), bridge.props(options))
        print(target)
    finally:
        document.close(True)


profile = os.path.join(out, ".profile")
office, desktop = bridge.start_office(soffice, profile, None)
try:
    text, pages, sheet, slides = write("base.fodt", TEXT), write("pages.fodt", PAGES), write("base.fods", SHEET), write("base.fodp", SLIDES)
    drawing = write("base.fodg", DRAWING)
    for extension in ("docx", "doc", "odt", "rtf", "ott", "dotx", "dot", "fodt"):
        store(desktop, text, "fixture." + extension, extension)
    for extension in ("xlsx", "xls", "ods", "ots", "xltx", "xlt", "fods"):
        store(desktop, sheet, "fixture." + extension, extension)
    for extension in ("pptx", "ppt", "odp", "otp", "potx", "pot", "fodp"):
        store(desktop, slides, "fixture." + extension, extension)
    for extension in ("odg", "otg", "fodg"):
        store(desktop, drawing, "fixture." + extension, extension)
    store(desktop, pages, "pages.docx", "docx")
    for extension, source in (("odt", text), ("ods", sheet)):
        store(desktop, source, "protected." + extension, extension, password="sesame")
finally:
    desktop.terminate()
    office.wait(timeout=30)
