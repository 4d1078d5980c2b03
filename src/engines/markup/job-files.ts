/**
 * Files the engine writes into each job's working directory for pandoc: our own, read by pandoc
 * outside its sandbox (filters and templates are not documents), never anything a user sent.
 */

/**
 * A Lua filter that makes the document inert before pandoc writes it, whatever the target.
 * pandoc passes through what its readers keep: raw HTML, LaTeX or OOXML (rst's `raw`
 * directive, org's export blocks, Markdown's raw HTML), every attribute of an HTML element
 * (`onclick`, `style`), any link scheme (`javascript:`), and metadata that standalone templates
 * insert raw (`header-includes`) or that writers read as files (`css`, `cover-image`). Measured
 * with pandoc 2.17: all of these reached HTML, EPUB and Markdown outputs. Here they go:
 * - raw blocks and inlines of every format are dropped (raw HTML has been read as HTML before,
 *   by RAW_HTML_FILTER, where the document may hold some: what is left is scripts, styles,
 *   frames, form fields, raw LaTeX or OOXML);
 * - attributes keep only a few harmless keys (ids and classes stay);
 * - a link to anything but http(s), mailto, a fragment or a relative address keeps its text
 *   only; an image keeps its alt text only unless it is http(s), relative or a PNG/JPEG/GIF/WebP
 *   `data:` address, and named like an image when it has an extension (pandoc's HTML writer
 *   makes `<embed>`, `<video>` or `<audio>` of anything else);
 * - metadata keeps the descriptive fields (title, author, date, ...) only.
 */
const INERT_FILTER = String.raw`-- convd: makes the document inert before pandoc writes it (src/engines/markup/job-files.ts).
local KEEP_ATTRIBUTES = { width = true, height = true, title = true, lang = true, dir = true, ['custom-style'] = true }
local KEEP_META = {
  title = true, subtitle = true, author = true, date = true, lang = true, dir = true, abstract = true,
  description = true, keywords = true, subject = true, rights = true, publisher = true, creator = true, contributor = true,
}
local SAFE_SCHEMES = { http = true, https = true, mailto = true }
local SAFE_DATA_IMAGES = { ['image/png'] = true, ['image/jpeg'] = true, ['image/gif'] = true, ['image/webp'] = true }
local IMAGE_EXTENSIONS = {
  png = true, jpg = true, jpeg = true, jpe = true, jfif = true, gif = true, webp = true, svg = true, bmp = true,
  tif = true, tiff = true, avif = true, emf = true, wmf = true, ico = true,
}

-- Browsers ignore control characters and white space in a scheme ("java\tscript:"), and pandoc
-- percent-encodes white space in addresses: so this decodes, then drops both before it looks.
local function safe_target(url, image)
  local decoded = url:gsub('%%(%x%x)', function(hex) return string.char(tonumber(hex, 16)) end)
  local bare = decoded:gsub('[%c%s]', ''):lower()
  local scheme = bare:match('^([%a][%w+.-]*):')
  if scheme == nil then return true end
  if SAFE_SCHEMES[scheme] then return true end
  if image and scheme == 'data' then return SAFE_DATA_IMAGES[bare:match('^data:([^;,]*)')] == true end
  return false
end

local function image_named(url)
  local path = url:gsub('[?#].*$', '')
  local extension = path:match('%.([%w]+)$')
  return extension == nil or IMAGE_EXTENSIONS[extension:lower()] == true
end

local function inert_attr(attr)
  local kept = {}
  for _, pair in ipairs(attr.attributes) do
    if KEEP_ATTRIBUTES[pair[1]] then table.insert(kept, { pair[1], pair[2] }) end
  end
  return pandoc.Attr(attr.identifier, attr.classes, kept)
end

-- nil (unchanged: nothing is rebuilt) unless an attribute has to go.
local function clean(el)
  for _, pair in ipairs(el.attr.attributes) do
    if not KEEP_ATTRIBUTES[pair[1]] then
      el.attr = inert_attr(el.attr)
      return el
    end
  end
  return nil
end

local function clean_rows(rows)
  for _, row in ipairs(rows) do
    row.attr = inert_attr(row.attr)
    for _, cell in ipairs(row.cells) do cell.attr = inert_attr(cell.attr) end
  end
  return rows
end

return {
  {
    RawBlock = function() return {} end,
    RawInline = function() return {} end,
    Link = function(el)
      if not safe_target(el.target, false) then return el.content end
      return clean(el)
    end,
    Image = function(el)
      if not safe_target(el.src, true) or not image_named(el.src) then return el.caption end
      return clean(el)
    end,
%ATTRIBUTE_HANDLERS%    Meta = function(meta)
      for key, _ in pairs(meta) do
        if not KEEP_META[key] then meta[key] = nil end
      end
      return meta
    end,
  },
}
`;

/** The handlers for elements whose attributes may carry keys and values to take out. */
const ATTRIBUTE_HANDLERS = String.raw`    -- Every other element with attributes (pandoc 3 adds Figure; 2.x has none and ignores the key).
    Span = clean, Code = clean, Div = clean, Header = clean, CodeBlock = clean, Figure = clean,
    Table = function(el)
      el.attr = inert_attr(el.attr)
      el.head.attr = inert_attr(el.head.attr)
      el.head.rows = clean_rows(el.head.rows)
      local bodies = el.bodies
      for _, body in ipairs(bodies) do
        body.attr = inert_attr(body.attr)
        body.head = clean_rows(body.head)
        body.body = clean_rows(body.body)
      end
      el.bodies = bodies
      el.foot.attr = inert_attr(el.foot.attr)
      el.foot.rows = clean_rows(el.foot.rows)
      return el
    end,
`;

/**
 * The inert filter. `keyValueAttributes` false leaves out the handlers for attributes: for
 * GitHub's Markdown without raw HTML, whose reader gives no element a key-value attribute (ids
 * and classes only), the filter's pass over every span, code, heading and table is 5-10 % of
 * pandoc's whole conversion for nothing.
 */
export function inertFilter(keyValueAttributes: boolean): string {
  return INERT_FILTER.replace('%ATTRIBUTE_HANDLERS%', keyValueAttributes ? ATTRIBUTE_HANDLERS : '');
}

/**
 * A Lua filter for a Markdown result (GitHub's), after the inert filter: what Markdown cannot say
 * goes, rather than being written as HTML. pandoc's gfm writer writes an element with an id, a
 * class or an attribute Markdown has no syntax for as raw HTML: a web page came out as `<div
 * id="content" class="clearfix">` around every part, `<a href="fs.html" class="nav-fs">` for every
 * link, `<span class="kbd">` around words (a Node.js API page: 406 lines of `<div>` in 5,535).
 * Divisions and spans give their content, links and inline code lose their attributes, a code
 * block keeps its first class (the language, as fenced code says it), an image its size, a
 * heading its id (Markdown makes its own).
 */
export const MARKDOWN_FILTER = String.raw`-- convd: Markdown without HTML wrappers (src/engines/markup/job-files.ts).
local function sized_only(el)
  local kept = {}
  for _, pair in ipairs(el.attributes) do
    if pair[1] == 'width' or pair[1] == 'height' then table.insert(kept, { pair[1], pair[2] }) end
  end
  el.attr = pandoc.Attr('', {}, kept)
  return el
end

return {
  {
    Div = function(el) return el.content end,
    Span = function(el) return el.content end,
    Link = function(el) el.attr = pandoc.Attr(); return el end,
    Code = function(el) el.attr = pandoc.Attr(); return el end,
    CodeBlock = function(el)
      el.attr = pandoc.Attr('', el.classes[1] and { el.classes[1] } or {}, {})
      return el
    end,
    Image = sized_only,
    Header = function(el) el.attr = pandoc.Attr(el.identifier, {}, {}); return el end,
  },
}
`;

/**
 * A Lua filter for an rst source, first of all: where pandoc 2.17's rst reader (Debian 12's) reads
 * otherwise than docutils, the reference. A paragraph that ends in `text ::` before a literal
 * block: docutils drops the `::` with its space, pandoc 2.17 kept ` :` (every example of the AWS
 * CLI's docs ends `... Region. ::`, and came out `Region. :`). A `parsed-literal` block: its
 * lines stay lines (pandoc 2.17 makes one paragraph of them, a word wrap away from each other);
 * an HTML result (HTML_TEMPLATE) sets it in the code font. Harmless with a pandoc that reads both right.
 */
export const RST_FILTER = String.raw`-- convd: rst as docutils reads it (src/engines/markup/job-files.ts).
function Blocks(blocks)
  for i = 1, #blocks - 1 do
    local block = blocks[i]
    if block.t == 'Para' and blocks[i + 1].t == 'CodeBlock' then
      local inlines = block.content
      local n = #inlines
      if n >= 2 and inlines[n].t == 'Str' and inlines[n].text == ':' and inlines[n - 1].t == 'Space' then
        inlines:remove(n)
        inlines:remove(n - 1)
      end
    end
  end
  return blocks
end

function Div(div)
  if div.classes:includes('parsed-literal') then
    return pandoc.walk_block(div, { SoftBreak = function() return pandoc.LineBreak() end })
  end
end
`;

/**
 * A Lua filter for a plain-text result, after the inert filter. pandoc's plain writer draws a
 * table whose cells hold more than a line of text (a web page's layout tables: menus, lists,
 * tables inside tables) as boxes of `+---+` and `|`, the words cut to the cells' widths, and
 * writes an image without a description as `[]`. A table of such cells gives its cells' contents
 * in reading order instead (tables of plain cells stay tables); an image without a description
 * is left out (one with a description stays `[description]`), and a list item that held only
 * such an image with it (a navigation bar's logo left an empty bullet).
 */
export const TEXT_FILTER = String.raw`-- convd: plain text without boxes drawn round layout (src/engines/markup/job-files.ts).
local function plain_cells(rows)
  for _, row in ipairs(rows) do
    for _, cell in ipairs(row.cells) do
      local blocks = cell.contents
      if #blocks > 1 or (blocks[1] ~= nil and blocks[1].t ~= 'Plain' and blocks[1].t ~= 'Para') then return false end
    end
  end
  return true
end

local function rows_of(el)
  local rows = {}
  for _, row in ipairs(el.head.rows) do table.insert(rows, row) end
  for _, body in ipairs(el.bodies) do
    for _, row in ipairs(body.head) do table.insert(rows, row) end
    for _, row in ipairs(body.body) do table.insert(rows, row) end
  end
  for _, row in ipairs(el.foot.rows) do table.insert(rows, row) end
  return rows
end

local function empty_item(blocks)
  for _, block in ipairs(blocks) do
    if not ((block.t == 'Plain' or block.t == 'Para') and pandoc.utils.stringify(block):match('^%s*$')) then return false end
  end
  return true
end

local function without_empty_items(el)
  local kept = {}
  for _, item in ipairs(el.content) do
    if not empty_item(item) then table.insert(kept, item) end
  end
  if #kept == #el.content then return nil end
  if #kept == 0 then return {} end
  el.content = kept
  return el
end

return {
  {
    Image = function(el)
      if #el.caption == 0 then return {} end
      return nil
    end,
    -- Tables inside tables are walked first: an outer table's cells then hold their contents.
    Table = function(el)
      local rows = rows_of(el)
      if plain_cells(rows) then return nil end
      local blocks = {}
      for _, row in ipairs(rows) do
        for _, cell in ipairs(row.cells) do
          for _, block in ipairs(cell.contents) do table.insert(blocks, block) end
        end
      end
      return blocks
    end,
  },
  -- After the images have gone: a list item that held only one has nothing left to say.
  {
    BulletList = without_empty_items,
    OrderedList = without_empty_items,
  },
}
`;

/**
 * A Lua filter that numbers the headings (1, 1.1, 1.2, 2, ...) for writers that ignore pandoc's
 * --number-sections (RTF), the way the others number them: a heading of class `unnumbered` keeps
 * no number and counts for none, a level without a heading above it counts as 0 ("0.1"). It runs
 * after the inert filter, so a table of contents (--toc, made by the writer) shows the numbers too.
 */
export const NUMBER_FILTER = String.raw`-- convd: numbered headings (src/engines/markup/job-files.ts).
local counts = {}
return {
  {
    Header = function(el)
      if el.classes:includes('unnumbered') then return nil end
      counts[el.level] = (counts[el.level] or 0) + 1
      for level = el.level + 1, 6 do counts[level] = nil end
      local parts = {}
      for level = 1, el.level do parts[level] = tostring(counts[level] or 0) end
      el.content:insert(1, pandoc.Space())
      el.content:insert(1, pandoc.Str(table.concat(parts, '.')))
      return el
    end,
  },
}
`;

/**
 * A Lua filter that reads raw HTML as HTML, run before the inert filter where the document may hold
 * some (markup-engine.ts): Markdown's raw HTML above all (`<pre>`, `<div>`, `<table>`,
 * `<details>`, `<b>`, `<br>`: CommonMark keeps it raw, and the inert filter would drop it with its
 * text), rst's `raw:: html`, org's HTML export blocks, what pandoc's EPUB reader keeps raw. What it
 * says becomes the document's own elements (a code block, a div, a table, bold, a line break),
 * in every target alike, as a browser would show it: the HTML page the data engine makes of the
 * same Markdown, the PDF printed from that page, docx, odt, rtf and text all hold the same words.
 * - A run of raw pieces is read together until the elements its first piece opened are closed
 *   ("<b>", "bold", "</b>"; "<details>", Markdown paragraphs, "</details>"); the Markdown between
 *   the pieces goes to the reader as an empty div or span and is put back in its place unchanged
 *   (after the run's HTML if the reader kept no place for it: never lost).
 * - Markdown between a script's, a style's or a textarea's tags is code: it goes with them.
 * - pandoc's HTML reader runs with `raw_html`: without it, it fetches an iframe's address and
 *   reads the page into the document, and a filter's `pandoc.read` runs outside pandoc's sandbox.
 *   With it, what the reader does not know (scripts, styles, frames, objects, form fields, media)
 *   stays raw, for the inert filter to drop, and attributes and addresses go to it too.
 * Measured with pandoc 2.17: as a separate pass it costs 30-60 % of a large document's
 * conversion even without raw HTML, so the engine runs it only where it may apply.
 */
export const RAW_HTML_FILTER = String.raw`-- convd: raw HTML read as HTML (src/engines/markup/job-files.ts).
local SLOT = 'convdrawhtmlslot'
local VOID = {
  area = true, base = true, br = true, col = true, embed = true, hr = true, img = true, input = true, link = true,
  meta = true, param = true, source = true, track = true, wbr = true, keygen = true,
}
-- Elements whose content is code or form data, not text: Markdown between their tags goes with them.
local RAW_TEXT = { script = true, style = true, textarea = true }
local HTML_FORMATS = { html = true, html4 = true, html5 = true }

local function is_raw_html(el)
  return (el.t == 'RawBlock' or el.t == 'RawInline') and HTML_FORMATS[tostring(el.format):lower()] == true
end

-- How many elements a piece of HTML leaves open (negative: it closes more than it opens), and how
-- many of them hold code. Comments, CDATA, declarations and a script's own text ("a<b") hold no
-- tag. One pass from left to right, each search starting where the last one ended.
local function balance(text)
  local lower = text:lower()
  local last_gt = 0
  for at in lower:gmatch('()>') do last_gt = at end
  local open, code, pos = 0, 0, 1
  while true do
    local s = lower:find('<', pos, true)
    if s == nil or s > last_gt then break end
    local stop
    if lower:sub(s, s + 3) == '<!--' then
      stop = select(2, lower:find('-->', s + 4, true))
    elseif lower:sub(s, s + 8) == '<![cdata[' then
      stop = select(2, lower:find(']]>', s + 9, true))
    elseif lower:match('^<[!?]', s) then
      stop = lower:find('>', s, true)
    else
      local _, e, slash, name, rest = lower:find('^<(/?)(%a[%w:-]*)([^>]*)>', s)
      if e == nil then
        stop = s
      elseif slash == '/' then
        open = open - 1
        if RAW_TEXT[name] then code = code - 1 end
        stop = e
      elseif not VOID[name] and not rest:match('/%s*$') then
        open = open + 1
        stop = e
        if RAW_TEXT[name] then
          -- Its text is no markup: on to its end tag, or it holds the rest.
          local close = select(2, lower:find('</' .. name, e + 1, true))
          if close == nil then
            code = code + 1
            break
          end
          open = open - 1
          stop = lower:find('>', close, true) or #lower
        end
      else
        stop = e
      end
    end
    if stop == nil then break end
    pos = stop + 1
  end
  return open, code
end

-- pandoc's HTML reader, with raw_html: what it does not know (a script, a style, a frame, a form
-- field) it keeps raw, for the next pass to drop, instead of acting on it. Without raw_html it
-- fetches an iframe's address and reads the page in, and a filter's pandoc.read runs outside
-- pandoc's sandbox.
local function read_html(html, inline, slots)
  local blocks = pandoc.read(html, 'html+raw_html').blocks
  if #slots > 0 then
    local used = {}
    local function fill(el)
      local id = el.identifier
      if id:sub(1, #SLOT) ~= SLOT then return nil end
      local k = tonumber(id:sub(#SLOT + 1))
      if k == nil or slots[k] == nil or used[k] then return nil end
      used[k] = true
      return slots[k]
    end
    local filter, wrapper = inline and { Span = fill } or { Div = fill }, pandoc.Div(blocks)
    -- Element:walk from pandoc 2.17 on (pandoc 3 deprecates walk_block); walk_block before.
    blocks = (wrapper.walk and wrapper:walk(filter) or pandoc.walk_block(wrapper, filter)).content
    -- Markdown the reader kept no place for (inside an svg, say) comes after the HTML, never lost.
    for k, slot in ipairs(slots) do
      if not used[k] then
        if inline then blocks:insert(pandoc.Plain(slot)) else blocks:extend(slot) end
      end
    end
  end
  if not inline then return blocks end
  -- In a line, a block the reader kept raw (an iframe's tag) goes now, not as a line break.
  blocks = blocks:filter(function(block) return block.t ~= 'RawBlock' end)
  if #blocks == 1 and (blocks[1].t == 'Para' or blocks[1].t == 'Plain') then return blocks[1].content end
  return pandoc.utils.blocks_to_inlines(blocks, { pandoc.LineBreak() })
end

local read_before = {}

-- A list of blocks or of inlines with each run of raw HTML read as HTML: a run starts at a piece of
-- raw HTML and goes on until the elements it opened are closed (or the list ends), so that
-- "<b>", "bold", "</b>" is read as one element. The Markdown between the pieces keeps its place:
-- it goes to the reader as an empty div or span (a slot) and is put back there as it was.
local function regroup(list, inline)
  local found = false
  for _, el in ipairs(list) do
    if is_raw_html(el) then
      found = true
      break
    end
  end
  if not found then return nil end
  local out = pandoc.List()
  local i, n = 1, #list
  while i <= n do
    local el = list[i]
    if not is_raw_html(el) then
      out:insert(el)
      i = i + 1
    else
      local parts, slots = { el.text }, {}
      local open, code = balance(el.text)
      local j = i
      while open > 0 and j < n do
        if is_raw_html(list[j + 1]) then
          j = j + 1
          parts[#parts + 1] = list[j].text
          local o, c = balance(list[j].text)
          open, code = open + o, code + c
        else
          local slot = pandoc.List()
          while j < n and not is_raw_html(list[j + 1]) do
            j = j + 1
            slot:insert(list[j])
          end
          -- Inside a script or a style it is code (browsers run it, show nothing): it goes too.
          if code <= 0 then
            slots[#slots + 1] = slot
            parts[#parts + 1] = (inline and '<span id="%s%d"></span>' or '<div id="%s%d"></div>'):format(SLOT, #slots)
          end
        end
      end
      local html = table.concat(parts, inline and '' or '\n')
      local result
      if #slots > 0 then
        result = read_html(html, inline, slots)
      else
        -- The same piece again (a <br> on every line) is read once.
        local key = (inline and 'i' or 'b') .. html
        result = read_before[key]
        if result == nil then
          result = read_html(html, inline, slots)
          read_before[key] = result
        end
      end
      out:extend(result)
      i = j + 1
    end
  end
  return out
end

return {
  { Inlines = function(list) return regroup(list, true) end, Blocks = function(list) return regroup(list, false) end },
}
`;

/**
 * The page an HTML result is: pandoc's body in a head of our own (pandoc's default template
 * would insert `header-includes` and link `css` from the document's metadata; the filter drops
 * those too, this does not depend on it). Variables are pandoc's, rendered and escaped by it.
 */
export const HTML_TEMPLATE = `<!DOCTYPE html>
<html>
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>$pagetitle$</title>
<style>
body { max-width: 42em; margin: 2em auto; padding: 0 1em; font-family: system-ui, sans-serif; line-height: 1.5; color: #1a1a1a; }
h1, h2, h3, h4, h5, h6 { line-height: 1.2; margin-top: 1.4em; }
pre, code { font-family: ui-monospace, monospace; font-size: 0.9em; }
pre { padding: 0.75em; overflow-x: auto; background: #f4f4f4; }
blockquote { margin: 1em 0; padding-left: 1em; border-left: 3px solid #ccc; color: #555; }
table { border-collapse: collapse; margin: 1em 0; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.5em; }
img { max-width: 100%; }
nav#TOC { margin-bottom: 2em; }
.header-section-number { margin-right: 0.5em; }
span.smallcaps { font-variant: small-caps; }
div.line-block { white-space: pre-line; }
div.parsed-literal { font-family: ui-monospace, monospace; font-size: 0.9em; }
</style>
</head>
<body>
$if(title)$
<header id="title-block-header">
<h1 class="title">$title$</h1>
$if(subtitle)$
<p class="subtitle">$subtitle$</p>
$endif$
$for(author)$
<p class="author">$author$</p>
$endfor$
$if(date)$
<p class="date">$date$</p>
$endif$
</header>
$endif$
$if(toc)$
<nav id="TOC" role="doc-toc">
$table-of-contents$
</nav>
$endif$
$body$
</body>
</html>
`;
