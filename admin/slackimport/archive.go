package slackimport

import (
	"archive/zip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"sort"
	"strings"
)

// archive indexes an export's entries without reading them: the top-level lists, each
// conversation folder's day files in date order, and any files a download tool put under
// __uploads/<file id>/.
type archive struct {
	lists   map[string]*zip.File
	days    map[string][]*zip.File
	uploads map[string]*zip.File
}

// newArchive indexes zr. An export zipped with a folder around it (export/users.json …) is
// read from inside that folder.
func newArchive(zr *zip.Reader) (*archive, error) {
	prefix := ""
	for _, f := range zr.File {
		if base := path.Base(f.Name); (base == "channels.json" || base == "users.json") && strings.Count(f.Name, "/") <= 1 {
			prefix = strings.TrimSuffix(f.Name, base)
			if prefix == "" {
				break
			}
		}
	}
	a := &archive{lists: map[string]*zip.File{}, days: map[string][]*zip.File{}, uploads: map[string]*zip.File{}}
	for _, f := range zr.File {
		name, ok := strings.CutPrefix(f.Name, prefix)
		if !ok || f.FileInfo().IsDir() {
			continue
		}
		parts := strings.Split(name, "/")
		switch {
		case len(parts) == 1:
			a.lists[name] = f
		case len(parts) == 3 && parts[0] == "__uploads":
			a.uploads[parts[1]] = f
		case len(parts) == 2 && isDayFile(parts[1]):
			a.days[parts[0]] = append(a.days[parts[0]], f)
		}
	}
	if a.lists["channels.json"] == nil && a.lists["users.json"] == nil && a.lists["org_users.json"] == nil {
		return nil, errors.New("not a Slack export: no users.json or channels.json in the archive")
	}
	for _, files := range a.days {
		sort.Slice(files, func(i, j int) bool { return files[i].Name < files[j].Name })
	}
	return a, nil
}

// isDayFile reports a name of the form YYYY-MM-DD.json.
func isDayFile(name string) bool {
	if len(name) != len("2006-01-02.json") || !strings.HasSuffix(name, ".json") {
		return false
	}
	for i, r := range name[:10] {
		if i == 4 || i == 7 {
			if r != '-' {
				return false
			}
		} else if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// eachEntry decodes the JSON array of f one element at a time, so a list of any length is read
// in the memory of its largest element. An element of the wrong shape is handed to fn with its
// error (the decoder has read past it); malformed JSON ends the file with an error.
func eachEntry[T any](f *zip.File, fn func(v T, err error) error) error {
	rc, err := f.Open()
	if err != nil {
		return fmt.Errorf("%s: %w", f.Name, err)
	}
	defer rc.Close()
	dec := json.NewDecoder(rc)
	tok, err := dec.Token()
	if err == io.EOF {
		return nil // an empty file holds nothing
	}
	if err != nil {
		return fmt.Errorf("%s: %w", f.Name, err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '[' {
		return fmt.Errorf("%s: not a JSON array", f.Name)
	}
	for dec.More() {
		var v T
		err := dec.Decode(&v)
		// A syntax error (or a cut file) leaves the decoder lost; a value of the wrong shape
		// does not: the decoder has read past it.
		var se *json.SyntaxError
		if err != nil && (errors.As(err, &se) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF)) {
			return fmt.Errorf("%s: malformed JSON after byte %d: %w", f.Name, dec.InputOffset(), err)
		}
		if err := fn(v, err); err != nil {
			return err
		}
	}
	if _, err := dec.Token(); err != nil {
		return fmt.Errorf("%s: %w", f.Name, err)
	}
	return nil
}
