package dashboard

import (
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"

	"github.com/plugboard/plugboard/abi"
)

// board answers GET board?project_id=P: every task of the project the
// caller reaches (Options.Board), for callers policy lets call list_tasks
// — the board's cards, whole, where list_tasks stops at 200.
func (d *Dashboard) board(w http.ResponseWriter, r *http.Request, c *abi.Caller) {
	if d.opts.Board == nil {
		writeEnvelope(w, http.StatusOK, abi.NewEnvelope(abi.CodeUnavailable, "this server has no task board", "serve with a data directory"))
		return
	}
	if !d.operator(c) && !slices.ContainsFunc(d.opts.Tools(c), func(t Tool) bool { return t.Name == "list_tasks" }) {
		writeEnvelope(w, http.StatusOK, abi.NewEnvelope(abi.CodePermissionDenied, c.ID+" may not list the board's tasks",
			"ask the operator to allow list_tasks for this identity's type in the agents file"))
		return
	}
	project := r.URL.Query().Get("project_id")
	if !uuidRE.MatchString(project) {
		writeEnvelope(w, http.StatusOK, abi.NewEnvelope(abi.CodeInvalidArgument, "project_id is not a UUID",
			"pick a project from list_projects").WithDetail("field", "project_id"))
		return
	}
	out, err := d.opts.Board(r.Context(), c, project)
	if err != nil {
		env := envelopeOf(err)
		if env.Code == abi.CodeNotFound {
			// The board's own hint speaks to an agent; this one to the person.
			env.Hint = "pick a project from list_projects"
		}
		writeEnvelope(w, http.StatusOK, env)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"ok": true, "result": out})
}

// setUpProject serves the operator's projects (create, with repositories)
// and projects/repos (add one) from a POST body.
func (d *Dashboard) setUpProject(r *http.Request, name string, c *abi.Caller) (any, error) {
	if r.Method != http.MethodPost {
		return nil, abi.NewEnvelope(abi.CodeInvalidArgument, "use POST", "POST a JSON body")
	}
	if d.opts.CreateProject == nil || d.opts.AddRepo == nil {
		return nil, abi.NewEnvelope(abi.CodeUnavailable, "this server has no task board", "serve with a data directory")
	}
	var body struct {
		Name        string      `json:"name"`
		Repos       []RepoInput `json:"repos"`
		ProjectID   string      `json:"project_id"`
		Path        string      `json:"path"`
		DisplayName string      `json:"display_name"`
	}
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&body); err != nil {
		return nil, abi.NewEnvelope(abi.CodeInvalidArgument, "the body is not JSON of this form: "+err.Error(), "reload the dashboard")
	}
	if name == "projects" {
		if strings.TrimSpace(body.Name) == "" {
			return nil, abi.NewEnvelope(abi.CodeMissingRequired, "a project needs a name", "type the project's name").WithDetail("field", "name")
		}
		if len(body.Repos) == 0 {
			return nil, abi.NewEnvelope(abi.CodeMissingRequired, "a project needs a git repository", "give the path of a git repository on this host").WithDetail("field", "repos")
		}
		for i, rp := range body.Repos {
			if strings.TrimSpace(rp.Path) == "" {
				return nil, abi.NewEnvelope(abi.CodeMissingRequired, "a repository needs a path", "give the path of a git repository on this host").
					WithDetail("field", "repos").WithDetail("index", i)
			}
		}
		return d.opts.CreateProject(r.Context(), c, strings.TrimSpace(body.Name), body.Repos)
	}
	if !uuidRE.MatchString(body.ProjectID) {
		return nil, abi.NewEnvelope(abi.CodeInvalidArgument, "project_id is not a UUID", "pick the project on the board").WithDetail("field", "project_id")
	}
	if strings.TrimSpace(body.Path) == "" {
		return nil, abi.NewEnvelope(abi.CodeMissingRequired, "a repository needs a path", "give the path of a git repository on this host").WithDetail("field", "path")
	}
	return d.opts.AddRepo(r.Context(), c, body.ProjectID, RepoInput{Path: body.Path, DisplayName: body.DisplayName})
}

// envelopeOf is err as the page shows it.
func envelopeOf(err error) *abi.Envelope {
	var env *abi.Envelope
	if errors.As(err, &env) {
		return env
	}
	return abi.NewEnvelope(abi.CodeInternal, err.Error(), "check the host's log")
}
