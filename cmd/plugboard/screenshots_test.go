package main

import (
	"image"
	_ "image/png" // DecodeConfig of the screenshots
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/plugboard/plugboard/internal/testing/buildtest"
)

// readmeImage matches an image of the README, in Markdown (![alt](src)) or
// HTML (<img src="src">).
var readmeImage = regexp.MustCompile(`!\[[^\]]*\]\(\s*([^)\s]+)|<img\s[^>]*\bsrc="([^"]+)"`)

// screenshotName matches the file name a screenshot is written to in the
// end-to-end tests: a string literal ending in .png on a Screenshot( line.
var screenshotName = regexp.MustCompile(`"([^"/]+\.png)"`)

// TestREADMEScreenshots: every image the README shows is a screenshot under
// docs/screenshots, a PNG at least 300 pixels wide, that a test of
// cmd/plugboard/e2e takes (its name in a Screenshot( call), so that
// build/screenshots.sh (make screenshots) regenerates every one of them and
// none goes stale without a test behind it.
func TestREADMEScreenshots(t *testing.T) {
	root := buildtest.Root(t)
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}

	taken := map[string]string{} // file name → the test file taking it
	files, err := filepath.Glob(filepath.Join(root, "cmd", "plugboard", "e2e", "*_test.go"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(src), "\n") {
			if !strings.Contains(line, "Screenshot(") {
				continue
			}
			for _, m := range screenshotName.FindAllStringSubmatch(line, -1) {
				taken[m[1]] = filepath.Base(f)
			}
		}
	}

	refs := readmeImage.FindAllStringSubmatch(string(readme), -1)
	if len(refs) == 0 {
		t.Fatal("the README shows no image: the pattern no longer matches how it embeds them")
	}
	for _, m := range refs {
		src := m[1] + m[2]
		if strings.Contains(src, "://") {
			t.Errorf("README image %s is not in the repository: put screenshots under docs/screenshots, taken by a test", src)
			continue
		}
		if path.Dir(path.Clean(src)) != "docs/screenshots" {
			t.Errorf("README image %s is not under docs/screenshots", src)
			continue
		}
		name := path.Base(src)
		if _, ok := taken[name]; !ok {
			t.Errorf("README image %s is taken by no test: no Screenshot( call under cmd/plugboard/e2e writes %q, so make screenshots would never regenerate it", src, name)
		}
		f, err := os.Open(filepath.Join(root, filepath.FromSlash(src)))
		if err != nil {
			t.Errorf("README image %s: %v (make screenshots writes it)", src, err)
			continue
		}
		cfg, format, err := image.DecodeConfig(f)
		f.Close()
		switch {
		case err != nil:
			t.Errorf("README image %s is not an image: %v", src, err)
		case format != "png":
			t.Errorf("README image %s is a %s, want a PNG", src, format)
		case cfg.Width < 300:
			t.Errorf("README image %s is %dx%d, want at least 300 pixels wide", src, cfg.Width, cfg.Height)
		}
	}
}
