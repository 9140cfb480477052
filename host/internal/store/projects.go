package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// Project is a named group of repositories that tasks belong to.
type Project struct {
	ID        string        `json:"project_id"`
	Name      string        `json:"name"`
	CreatedAt string        `json:"created_at"`
	UpdatedAt string        `json:"updated_at"`
	Repos     []ProjectRepo `json:"repos"`
}

// Repo is a git repository registered on the board, by absolute path.
type Repo struct {
	ID        string `json:"repo_id"`
	Name      string `json:"repo_name"`
	Path      string `json:"path"`
	CreatedAt string `json:"created_at"`
	UpdatedAt string `json:"updated_at"`
}

// ProjectRepo is a repository as a project uses it: the branch attempts
// start from and the optional scripts run around the agent.
type ProjectRepo struct {
	Repo
	TargetBranch  string `json:"target_branch"`
	SetupScript   string `json:"setup_script,omitempty"`
	CleanupScript string `json:"cleanup_script,omitempty"`
}

// ErrExists is returned (wrapped) when a unique name or path is taken.
var ErrExists = errors.New("already exists")

// ErrProjectExists is returned (wrapped) when a project's name is taken;
// it is an ErrExists too. It tells that clash from a repo name's, which
// also wraps ErrExists.
var ErrProjectExists = fmt.Errorf("project %w", ErrExists)

// CreateProject inserts a project.
func (s *Store) CreateProject(ctx context.Context, name string) (Project, error) {
	return s.CreateProjectWithRepos(ctx, name, nil)
}

// CreateProjectWithRepos inserts a project and attaches its repos in one
// transaction: a repo that cannot be attached (a name clash) leaves no
// project behind, half made.
func (s *Store) CreateProjectWithRepos(ctx context.Context, name string, repos []ProjectRepo) (Project, error) {
	now := Now()
	p := Project{ID: NewID(), Name: name, CreatedAt: now, UpdatedAt: now, Repos: []ProjectRepo{}}
	err := s.tx(ctx, func(tx *Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO projects (id, name, created_at, updated_at) VALUES (?, ?, ?, ?)`,
			p.ID, p.Name, p.CreatedAt, p.UpdatedAt)
		if isUnique(err) {
			return fmt.Errorf("%q: %w", name, ErrProjectExists)
		}
		if err != nil {
			return err
		}
		for _, pr := range repos {
			if err := addProjectRepo(ctx, tx, p.ID, pr); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return Project{}, err
	}
	if len(repos) == 0 {
		return p, nil
	}
	return s.GetProject(ctx, p.ID)
}

// EnsureRepo returns the repo registered at path, registering it under
// name if it is new.
func (s *Store) EnsureRepo(ctx context.Context, name, path string) (Repo, error) {
	var r Repo
	err := s.db.QueryRowContext(ctx, `SELECT id, name, path, created_at, updated_at FROM repos WHERE path = ?`, path).
		Scan(&r.ID, &r.Name, &r.Path, &r.CreatedAt, &r.UpdatedAt)
	if err == nil {
		return r, nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return Repo{}, err
	}
	now := Now()
	r = Repo{ID: NewID(), Name: name, Path: path, CreatedAt: now, UpdatedAt: now}
	_, err = s.db.ExecContext(ctx, `INSERT INTO repos (id, name, path, created_at, updated_at) VALUES (?, ?, ?, ?, ?)`,
		r.ID, r.Name, r.Path, r.CreatedAt, r.UpdatedAt)
	return r, err
}

// AddProjectRepo attaches a repo to a project (or updates how the project
// uses it). Repo names must be unique within a project because they prefix
// workspace paths. When pr.Name differs from the repo's registered name
// the repo is renamed — in every project holding it, so each of those must
// be free of another repo of that name too.
func (s *Store) AddProjectRepo(ctx context.Context, projectID string, pr ProjectRepo) error {
	return s.tx(ctx, func(tx *Tx) error { return addProjectRepo(ctx, tx, projectID, pr) })
}

func addProjectRepo(ctx context.Context, tx *Tx, projectID string, pr ProjectRepo) error {
	var clash string
	err := tx.QueryRowContext(ctx, `SELECT p.name FROM project_repos x JOIN repos r ON r.id = x.repo_id JOIN projects p ON p.id = x.project_id
		WHERE x.project_id IN (SELECT project_id FROM project_repos WHERE repo_id = ? UNION SELECT CAST(? AS TEXT)) AND r.name = ? AND r.id <> ?
		ORDER BY x.project_id = ? DESC, p.name LIMIT 1`, pr.ID, projectID, pr.Name, pr.ID, projectID).Scan(&clash)
	switch {
	case err == nil:
		return fmt.Errorf("a repo named %q in project %q: %w", pr.Name, clash, ErrExists)
	case !errors.Is(err, sql.ErrNoRows):
		return err
	}
	if _, err := tx.ExecContext(ctx, `UPDATE repos SET name = ?, updated_at = ? WHERE id = ? AND name <> ?`,
		pr.Name, Now(), pr.ID, pr.Name); err != nil {
		return err
	}
	_, err = tx.ExecContext(ctx, `INSERT INTO project_repos (project_id, repo_id, target_branch, setup_script, cleanup_script, created_at)
		VALUES (?, ?, ?, ?, ?, ?)
		ON CONFLICT (project_id, repo_id) DO UPDATE SET target_branch = excluded.target_branch,
			setup_script = excluded.setup_script, cleanup_script = excluded.cleanup_script`,
		projectID, pr.ID, pr.TargetBranch, pr.SetupScript, pr.CleanupScript, Now())
	if isForeignKey(err) {
		return notFound("project", projectID)
	}
	return err
}

// ListProjects returns every project with its repos, by name.
func (s *Store) ListProjects(ctx context.Context) ([]Project, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT id, name, created_at, updated_at FROM projects ORDER BY name, id`)
	if err != nil {
		return nil, err
	}
	var out []Project
	for rows.Next() {
		var p Project
		if err := rows.Scan(&p.ID, &p.Name, &p.CreatedAt, &p.UpdatedAt); err != nil {
			rows.Close()
			return nil, err
		}
		out = append(out, p)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	for i := range out {
		if out[i].Repos, err = s.ProjectRepos(ctx, out[i].ID); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// GetProject returns one project with its repos.
func (s *Store) GetProject(ctx context.Context, id string) (Project, error) {
	var p Project
	err := s.db.QueryRowContext(ctx, `SELECT id, name, created_at, updated_at FROM projects WHERE id = ?`, id).
		Scan(&p.ID, &p.Name, &p.CreatedAt, &p.UpdatedAt)
	if errors.Is(err, sql.ErrNoRows) {
		return Project{}, notFound("project", id)
	}
	if err != nil {
		return Project{}, err
	}
	p.Repos, err = s.ProjectRepos(ctx, id)
	return p, err
}

// FindProjectByName returns the project with this exact name.
func (s *Store) FindProjectByName(ctx context.Context, name string) (Project, error) {
	var id string
	err := s.db.QueryRowContext(ctx, `SELECT id FROM projects WHERE name = ?`, name).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return Project{}, notFound("project", name)
	}
	if err != nil {
		return Project{}, err
	}
	return s.GetProject(ctx, id)
}

// ProjectRepos returns a project's repos by name.
func (s *Store) ProjectRepos(ctx context.Context, projectID string) ([]ProjectRepo, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT r.id, r.name, r.path, r.created_at, r.updated_at,
			pr.target_branch, pr.setup_script, pr.cleanup_script
		FROM project_repos pr JOIN repos r ON r.id = pr.repo_id
		WHERE pr.project_id = ? ORDER BY r.name, r.id`, projectID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []ProjectRepo{}
	for rows.Next() {
		var pr ProjectRepo
		if err := rows.Scan(&pr.ID, &pr.Name, &pr.Path, &pr.CreatedAt, &pr.UpdatedAt,
			&pr.TargetBranch, &pr.SetupScript, &pr.CleanupScript); err != nil {
			return nil, err
		}
		out = append(out, pr)
	}
	return out, rows.Err()
}

// GetRepo returns one repo.
func (s *Store) GetRepo(ctx context.Context, id string) (Repo, error) {
	var r Repo
	err := s.db.QueryRowContext(ctx, `SELECT id, name, path, created_at, updated_at FROM repos WHERE id = ?`, id).
		Scan(&r.ID, &r.Name, &r.Path, &r.CreatedAt, &r.UpdatedAt)
	if errors.Is(err, sql.ErrNoRows) {
		return Repo{}, notFound("repo", id)
	}
	return r, err
}
