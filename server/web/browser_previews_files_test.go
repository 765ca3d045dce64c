package web_test

import (
	"archive/zip"
	"bytes"
	"compress/flate"
	"fmt"
	"io"
	"strings"
	"testing"
)

// The Office Open XML files the preview tests upload, made at test time.

type zipPart struct {
	name  string
	data  []byte
	store bool // kept as is (a picture), not deflated
}

func zipOf(t testing.TB, parts ...zipPart) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	// The fastest level: the files are made on every run, under -race too.
	zw.RegisterCompressor(zip.Deflate, func(w io.Writer) (io.WriteCloser, error) { return flate.NewWriter(w, flate.BestSpeed) })
	for _, p := range parts {
		m := zip.Deflate
		if p.store {
			m = zip.Store
		}
		w, err := zw.CreateHeader(&zip.FileHeader{Name: p.name, Method: m})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write(p.data); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

const (
	nsMain = `xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships"`
	nsRels = `xmlns="http://schemas.openxmlformats.org/package/2006/relationships"`
	relDoc = `http://schemas.openxmlformats.org/officeDocument/2006/relationships/`
)

// workbookParts are the parts of a one-sheet workbook the preview reads besides the sheet.
func workbookParts() []zipPart {
	return []zipPart{
		{name: "xl/workbook.xml", data: []byte(`<?xml version="1.0" encoding="UTF-8"?><workbook ` + nsMain + `><sheets><sheet name="Sales" sheetId="1" r:id="rId1"/></sheets></workbook>`)},
		{name: "xl/_rels/workbook.xml.rels", data: []byte(`<Relationships ` + nsRels + `><Relationship Id="rId1" Type="` + relDoc + `worksheet" Target="worksheets/sheet1.xml"/></Relationships>`)},
		{name: "xl/sharedStrings.xml", data: []byte(`<sst ` + nsMain + `><si><t>Region</t></si><si><t>Revenue</t></si><si><r><t>North</t></r><r><t xml:space="preserve"> &amp; East</t></r></si><si><t>South</t></si></sst>`)},
	}
}

// xlsx is a workbook whose one sheet is sheet, plus any extra parts (never read by a preview).
func xlsx(t testing.TB, sheet string, extra ...zipPart) []byte {
	parts := append([]zipPart{{name: "[Content_Types].xml", data: []byte(`<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"/>`)}}, workbookParts()...)
	parts = append(parts, zipPart{name: "xl/worksheets/sheet1.xml", data: []byte(sheet)})
	return zipOf(t, append(parts, extra...)...)
}

const salesSheet = `<worksheet ` + nsMain + `><sheetData>
<row r="1"><c r="A1" t="s"><v>0</v></c><c r="B1" t="s"><v>1</v></c><c r="C1" t="inlineStr"><is><t>Target met</t></is></c></row>
<row r="2"><c r="A2" t="s"><v>2</v></c><c r="B2"><v>1250.5</v></c><c r="C2" t="b"><v>1</v></c></row>
<row r="3"><c r="A3" t="s"><v>3</v></c><c r="B3"><v>980</v></c><c r="C3" t="b"><v>0</v></c></row>
</sheetData></worksheet>`

// expandingXLSX is a workbook whose read parts expand to exactly n bytes, a zip bomb of a kind:
// one row repeated, then a comment that pads the sheet to the byte.
func expandingXLSX(t testing.TB, n int) []byte {
	rest := n
	for _, p := range workbookParts() {
		rest -= len(p.data)
	}
	head, row, tail := `<worksheet `+nsMain+`><sheetData>`, `<row><c t="s"><v>3</v></c><c><v>1250.5</v></c></row>`, `</sheetData><!---->`+`</worksheet>`
	rows := (rest - len(head) - len(tail)) / len(row)
	sheet := head + strings.Repeat(row, rows) + `</sheetData><!--` + strings.Repeat(" ", rest-len(head)-rows*len(row)-len(tail)) + `--></worksheet>`
	if len(sheet) != rest {
		t.Fatalf("sheet is %d bytes, want %d", len(sheet), rest)
	}
	return xlsx(t, sheet)
}

// lyingXLSX is a workbook whose sheet inflates to n bytes while its headers claim 100.
func lyingXLSX(t *testing.T, n int) []byte {
	t.Helper()
	sheet := []byte(`<worksheet ` + nsMain + `><sheetData></sheetData><!--` + strings.Repeat("z", n) + `--></worksheet>`)
	var deflated bytes.Buffer
	fw, _ := flate.NewWriter(&deflated, flate.BestSpeed)
	_, _ = fw.Write(sheet)
	_ = fw.Close()
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	for _, part := range workbookParts() {
		w, _ := zw.Create(part.name)
		_, _ = w.Write(part.data)
	}
	w, err := zw.CreateRaw(&zip.FileHeader{Name: "xl/worksheets/sheet1.xml", Method: zip.Deflate,
		CompressedSize64: uint64(deflated.Len()), UncompressedSize64: 100, CRC32: 0})
	if err != nil {
		t.Fatal(err)
	}
	_, _ = w.Write(deflated.Bytes())
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// sizedXLSX is a workbook of exactly n bytes on disk: a small sheet and a stored picture that
// a preview never expands (its bytes do not matter, so they are zeros).
func sizedXLSX(t testing.TB, n int) []byte {
	picture := func(size int) zipPart {
		return zipPart{name: "xl/media/image1.png", data: make([]byte, size), store: true}
	}
	// A stored entry's overhead does not depend on its size: measure it on an empty picture.
	out := xlsx(t, salesSheet, picture(n-len(xlsx(t, salesSheet, picture(0)))))
	if len(out) != n {
		t.Fatalf("the workbook is %d bytes, want %d", len(out), n)
	}
	return out
}

func pptx(t *testing.T, slides ...string) []byte {
	ns := `xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main" xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships" xmlns:p="http://schemas.openxmlformats.org/presentationml/2006/main"`
	var ids, rels strings.Builder
	parts := []zipPart{}
	for i, s := range slides {
		fmt.Fprintf(&ids, `<p:sldId id="%d" r:id="rId%d"/>`, 256+i, i+2)
		fmt.Fprintf(&rels, `<Relationship Id="rId%d" Type="%sslide" Target="slides/slide%d.xml"/>`, i+2, relDoc, i+1)
		var body strings.Builder
		for _, para := range strings.Split(s, "\n") {
			fmt.Fprintf(&body, `<a:p><a:r><a:rPr lang="en-US"/><a:t>%s</a:t></a:r></a:p>`, para)
		}
		parts = append(parts, zipPart{name: fmt.Sprintf("ppt/slides/slide%d.xml", i+1),
			data: []byte(`<p:sld ` + ns + `><p:cSld><p:spTree><p:sp><p:txBody><a:bodyPr/>` + body.String() + `</p:txBody></p:sp></p:spTree></p:cSld></p:sld>`)})
	}
	parts = append([]zipPart{
		{name: "ppt/presentation.xml", data: []byte(`<p:presentation ` + ns + `><p:sldIdLst>` + ids.String() + `</p:sldIdLst></p:presentation>`)},
		{name: "ppt/_rels/presentation.xml.rels", data: []byte(`<Relationships ` + nsRels + `>` + rels.String() + `</Relationships>`)},
	}, parts...)
	return zipOf(t, parts...)
}

// minimalPDF is a one-page PDF saying text, with a correct cross-reference table, padded by a
// comment to be pad bytes longer.
func minimalPDF(text string, pad int) []byte {
	content := fmt.Sprintf("BT /F1 24 Tf 72 720 Td (%s) Tj ET", text)
	objs := []string{
		"<< /Type /Catalog /Pages 2 0 R >>",
		"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
		"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>",
		fmt.Sprintf("<< /Length %d >>\nstream\n%s\nendstream", len(content), content),
		"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
	}
	var b bytes.Buffer
	b.WriteString("%PDF-1.4\n")
	if pad > 2 {
		b.WriteString("%" + strings.Repeat("x", pad-2) + "\n")
	}
	offsets := make([]int, len(objs))
	for i, o := range objs {
		offsets[i] = b.Len()
		fmt.Fprintf(&b, "%d 0 obj\n%s\nendobj\n", i+1, o)
	}
	xref := b.Len()
	fmt.Fprintf(&b, "xref\n0 %d\n0000000000 65535 f \n", len(objs)+1)
	for _, off := range offsets {
		fmt.Fprintf(&b, "%010d 00000 n \n", off)
	}
	fmt.Fprintf(&b, "trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n", len(objs)+1, xref)
	return b.Bytes()
}
