package a11y

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/plugboard/plugboard/internal/testing/browsertest"
)

// The pages are served under a Content-Security-Policy that allows no
// script at all, as the dashboard's does for anything but its own files:
// the check must work without the page's consent.
const csp = "default-src 'none'; img-src data:; style-src 'unsafe-inline'"

const pixel = "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII="

// cleanPage breaks no rule of the default tags.
const cleanPage = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Clean</title><link rel="icon" href="data:,"></head>
<body><main><h1>A clean page</h1>
<p><img src="` + pixel + `" alt="A pixel"> <button type="button">Save</button></p>
</main></body></html>`

// brokenPage is cleanPage with an image without alt text and a button
// without a name: two critical violations (image-alt, button-name). axe
// names each element by the shortest selector unique in the page: #logo,
// button.
const brokenPage = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Broken</title><link rel="icon" href="data:,"></head>
<body><main><h1>A broken page</h1>
<section id="fine"><p>Nothing wrong here.</p></section>
<p><img id="logo" src="` + pixel + `"> <button type="button" class="icon"></button></p>
</main></body></html>`

func serve(t *testing.T) string {
	t.Helper()
	mux := http.NewServeMux()
	page := func(body string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Security-Policy", csp)
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			fmt.Fprint(w, body)
		}
	}
	mux.HandleFunc("/clean", page(cleanPage))
	mux.HandleFunc("/broken", page(brokenPage))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv.URL
}

func find(vs []Violation, id string) (Violation, bool) {
	for _, v := range vs {
		if v.ID == id {
			return v, true
		}
	}
	return Violation{}, false
}

// TestCheckFindsViolations: the image without alt text and the button
// without a name are found, critical, at their elements, under a CSP that
// forbids every script.
func TestCheckFindsViolations(t *testing.T) {
	base := serve(t)
	Source(t) // skip before starting a browser when axe-core cannot be installed
	p := browsertest.Start(t).Page(t)
	p.Go(base + "/broken")
	vs := Check(t, p)
	for _, want := range []struct{ id, target string }{{"image-alt", "#logo"}, {"button-name", "button"}} {
		v, ok := find(vs, want.id)
		if !ok {
			t.Errorf("no %s violation; got:\n%s", want.id, Format(vs))
			continue
		}
		if !v.Blocking() || v.Help == "" || !strings.Contains(v.HelpURL, want.id) {
			t.Errorf("%s: impact %q, help %q, helpUrl %q", want.id, v.Impact, v.Help, v.HelpURL)
		}
		if len(v.Nodes) != 1 || len(v.Nodes[0].Target) != 1 || v.Nodes[0].Target[0] != want.target || v.Nodes[0].FailureSummary == "" {
			t.Errorf("%s: nodes %+v, want one at %s with a failure summary", want.id, v.Nodes, want.target)
		}
	}
	if errs := p.ConsoleErrors(); len(errs) > 0 {
		t.Errorf("the check made the page log errors: %v", errs)
	}

	// Within the section that has nothing wrong, nothing is found; a
	// disabled rule is not reported.
	if vs := Check(t, p, Within("#fine")); len(vs) != 0 {
		t.Errorf("within #fine: %s", Format(vs))
	}
	vs = Check(t, p, DisableRules("image-alt"))
	if _, ok := find(vs, "image-alt"); ok {
		t.Error("image-alt reported though disabled")
	}
	if _, ok := find(vs, "button-name"); !ok {
		t.Errorf("button-name not reported with image-alt disabled: %s", Format(vs))
	}
}

// TestCheckPassesCleanPage: a page that breaks nothing gets no violation,
// after a navigation dropped the axe-core injected before it.
func TestCheckPassesCleanPage(t *testing.T) {
	base := serve(t)
	Source(t)
	p := browsertest.Start(t).Page(t)
	p.Go(base + "/broken")
	if vs := Check(t, p); len(vs) == 0 {
		t.Fatal("no violation on the broken page")
	}
	p.Go(base + "/clean")
	if vs := Check(t, p); len(vs) != 0 {
		t.Errorf("the clean page has violations:\n%s", Format(vs))
	}
	RequireClean(t, p, "clean")
}

// recorder is a testing.TB that keeps what RequireClean reports.
type recorder struct {
	testing.TB
	errors, logs []string
}

func (r *recorder) Errorf(format string, args ...any) {
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}
func (r *recorder) Logf(format string, args ...any) {
	r.logs = append(r.logs, fmt.Sprintf(format, args...))
}

// TestRequireCleanFails: RequireClean fails on the broken page, naming each
// rule, what it asks for and the element's selector.
func TestRequireCleanFails(t *testing.T) {
	base := serve(t)
	Source(t)
	p := browsertest.Start(t).Page(t)
	p.Go(base + "/broken")
	r := &recorder{TB: t}
	RequireClean(r, p, "broken page")
	if len(r.errors) != 1 {
		t.Fatalf("RequireClean reported %d failures on the broken page, want 1: %q", len(r.errors), r.errors)
	}
	msg := r.errors[0]
	t.Logf("the failure reads:\n%s", msg)
	for _, want := range []string{"broken page", "2 serious or critical", "image-alt (critical)", "Images must have alternative text",
		"at #logo <img id=\"logo\"", "button-name (critical)", "at button <button type=\"button\" class=\"icon\"></button>: Fix any of the following: Element does not have inner text that is visible to screen readers; aria-label"} {
		if !strings.Contains(msg, want) {
			t.Errorf("the failure does not say %q", want)
		}
	}
}
