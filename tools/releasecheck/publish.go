package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"golang.org/x/mod/module"
	"golang.org/x/mod/zip"
)

// workingTree lists the files of the repository at root as the next commit
// would hold them: tracked files that still exist, and untracked ones that
// .gitignore does not exclude (slash paths, relative to root).
func workingTree(root string) ([]string, error) {
	cmd := exec.Command("git", "ls-files", "-z", "--cached", "--others", "--exclude-standard")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("git ls-files in %s: %w", root, err)
	}
	var files []string
	seen := map[string]bool{}
	for f := range strings.SplitSeq(strings.TrimSuffix(string(out), "\x00"), "\x00") {
		if f == "" || seen[f] {
			continue
		}
		seen[f] = true
		if fi, err := os.Lstat(filepath.Join(root, filepath.FromSlash(f))); err != nil || !fi.Mode().IsRegular() {
			continue // deleted in the work tree, or a symbolic link (no zip holds one)
		}
		files = append(files, f)
	}
	return files, nil
}

// zipFile is a file of the working tree as golang.org/x/mod/zip reads it.
type zipFile struct{ root, dir, name string }

func (f zipFile) Path() string {
	if f.dir == "." {
		return f.name
	}
	return strings.TrimPrefix(f.name, f.dir+"/")
}
func (f zipFile) Lstat() (fs.FileInfo, error)  { return os.Lstat(f.abs()) }
func (f zipFile) Open() (io.ReadCloser, error) { return os.Open(f.abs()) }
func (f zipFile) abs() string                  { return filepath.Join(f.root, filepath.FromSlash(f.name)) }

// publish writes every module at rel's version into a file-based module
// proxy at dir (the layout GOPROXY=file://dir reads: MODULE/@v/list,
// VERSION.info, VERSION.mod, VERSION.zip, with module paths escaped).
func publish(dir, root string, rel release, mods []goModule, files []string) error {
	for _, m := range mods {
		mv := module.Version{Path: m.Path, Version: rel.Version}
		esc, err := module.EscapePath(m.Path)
		if err != nil {
			return fmt.Errorf("module %s: %w", m.Path, err)
		}
		at := filepath.Join(dir, filepath.FromSlash(esc), "@v")
		if err := os.MkdirAll(at, 0o755); err != nil {
			return err
		}
		var zf []zip.File
		for _, name := range moduleFiles(m.Dir, files) {
			if name == "go.work" || name == "go.work.sum" {
				continue // the repository's workspace, not part of a module
			}
			zf = append(zf, zipFile{root: root, dir: m.Dir, name: name})
		}
		var buf bytes.Buffer
		if err := zip.Create(&buf, mv, zf); err != nil {
			return fmt.Errorf("module %s: zip of %s: %w", m.Path, m.Dir, err)
		}
		info, _ := json.Marshal(struct {
			Version string
			Time    string
		}{rel.Version, rel.Time.UTC().Format("2006-01-02T15:04:05Z")})
		for name, data := range map[string][]byte{
			"list":                []byte(rel.Version + "\n"),
			rel.Version + ".info": info,
			rel.Version + ".mod":  m.GoMod,
			rel.Version + ".zip":  buf.Bytes(),
		} {
			if err := os.WriteFile(filepath.Join(at, name), data, 0o644); err != nil {
				return err
			}
		}
	}
	return nil
}
