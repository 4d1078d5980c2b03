/**
 * A Word 6.0 document, which LibreOffice reads with its "MS Word 95" filter and no longer writes:
 * Word6.doc of Apache POI's test data (test-data/document/Word6.doc, Apache License 2.0),
 * gzipped. Its text is WORD6_TEXT. No old binary format can be made by LibreOffice 7.4 (its
 * Word 95, Excel 95 and PowerPoint 95 filters only import), and Excel 4 files that Python can
 * write are read by the '97 filter anyway, so this one real file stands for them.
 */
import { gunzipSync } from 'node:zlib';

export const WORD6_TEXT = 'The quick brown fox jumps over the lazy dog';

const WORD6_GZIP_BASE64 = `
H4sIAAAAAAACA+1YTWwbRRR+s45rO2mC80uaFjKEkhTiOKFFFeJHSlKTpoImqLEoByqxttexm/WuWa/buKdKQE8ggSqEKlWilVp+
hISEkOBWeukREQl6QOIQjkgcaG491Oab2d3EJBTsEIHS+lmfZnbmzXvjee/NvrdL37cvX/6y7xdaR8+Sj8qVEO2oGmNAs/cQJlLc
sXKlUvGGKw3aVnTHbYUNm2A/PyBsHgCCQMi1b4vbNujeomNk4mcTpxfIQGtRieqhHnhMtbxa1pRr5KuVGvo3r9+7v2uJ/51AK9AG
POC8Aqgd6AA6gS6gW/oE0YNAL7AL6AN2A3uAh4CHgX6AA48AA8CjwF7gMWAQGAL2AY8DTwDDQAQYAaLAKDAGPAnsd/f4VOOOqpsY
TszX7PgQhRTpE9cd15gS9jqaTVpmwUzb/LhppfjB6NhIzFwo5jTDlrnA0TkxHjOT0htEP4oHOR89WIMvMieN2DSVK0KG8ldyafnt
j1Zuz2bCn78fpOGhr34S/hLHRIs7/zo5yjOAD7gIiBj40fX/39wYEMwiDnqZk//sdWWMMScmnmNOXEy7f+bXO46PC3+NZzT+RjGb
XOAJyzxt8LS5yE8Wc/kCN09pFrcxratnSjxlzss1wr8Pl3I8qauFAk9rql20ssY8V6vWq0ZqbZEbT0L/jHYqa/AZU9fNvDcu9jlj
WjlVj6ZMe403plnaAp8u6rpW8njF3oXNxsXAO+cOk9d3Sfa//mZ+Rb3BZP9a6ZngtRvs39jv56sajVwPiWMnrXoCBokAnc0b10Rq
EQzDxVhV+w8UCzn3V630asjxhUSoKicG6Xieo/+PvoX++KZWKjhyRowa9F9SHfdDaxddWRq9uvz8x8HAJ8HAp5f8n13yn9/uB+DG
+aS4gMsNf7ifSCkyxbN/w/T3H+Fdw9pQMQTRe1FWFDLXD9+qKGgDMS2tFnXbycH8dIBFWAsl6ARRspdUJ2VYR4M0Mb5SuYx210Si
oNpnRuZsZEuqlSokM1Y2bauWXc0/QOX+lcottD2uNv6yaqnzlprP8CnTsKXMcj+jDjZIgWlNTSEZE2/8MHX/Tj2LFGQ76EQTJfeg
mpkMCz5Oobi2aPOEmSqJvbeLmgicIr8YDbezAdZFTS9lCzbeuB2r8vcL+YfUvJ01DSG/k7oXxao25hd/9xWGakrwTbJe8h8xUtqi
yFW7ML+WEzXJSHJzefdOVVZvWB/yku6e98Afz+a0Ap/RTvNjZk41aCdGFZor5RKmTi2DgmXCyqq6ZD+7gV1wnHU5JqGUBd9FpbcE
TRm5mdIPH5y7cOXClJeGO8nzsHxicptvChXrRr3EY8i3Jfm/GFFufnfzYnR3+PyHyP8jt7+ICT9aN/aaW6d6WwjTWg5/t/F7ibby
+4804boa8i6vfBpv9e6AQ9CfozzNIrZP1r3/DlhFcWVW6viukli9g2ZJ/3PlURc1Q3u9318UWqs1/IjKIv5/jlR59kdghTROxJIj
NmXRN/5G1j5I877b1KpfnNVbbrwdl7pSFEOblDvRpB/USn2b+P+iXvLqOv8GzfWdx9Ob0H8AsLcwhrbz98c/ALbKmEsAGgAA
`;

export function word6Doc(): Buffer {
  return gunzipSync(Buffer.from(WORD6_GZIP_BASE64.replace(/\s/g, ''), 'base64'));
}
