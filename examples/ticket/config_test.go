package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/mcpguard/mcpguard/limiter"
	"github.com/mcpguard/mcpguard/policy"
)

func TestShippedConfigMapsOntoPolicyAndLimiter(t *testing.T) {
	disk, err := os.ReadFile("server.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if string(disk) != string(defaultConfig) {
		t.Fatal("the embedded server.yaml differs from the shipped file")
	}
	c, name, err := loadConfig("")
	if err != nil {
		t.Fatal(err)
	}
	if name != defaultConfigName {
		t.Errorf("name = %q", name)
	}
	if !c.DryRun || len(c.AllowedWriteTools) != 0 {
		t.Errorf("default posture: dry_run %v, allowlist %v; want dry-run on and no write allowed", c.DryRun, c.AllowedWriteTools)
	}
	pc := c.policyConfig()
	want := policy.Config{Tools: []policy.ToolRule{
		{Name: "create_ticket", Class: policy.Write, Cost: 5},
		{Name: "list_tools", Class: policy.Read, Cost: 0},
		{Name: "search_docs", Class: policy.Read, Cost: 1},
	}}
	if diff := cmp.Diff(want, pc); diff != "" {
		t.Errorf("policy config (-want +got):\n%s", diff)
	}
	wantLimits := []limiter.Limit{
		{Kind: limiter.Rate, Scope: limiter.Session, Max: 5, Window: time.Minute},
		{Kind: limiter.Spend, Scope: limiter.Session, Max: 10, Window: time.Minute},
		{Kind: limiter.Rate, Scope: limiter.User, Max: 30, Window: time.Minute},
		{Kind: limiter.Spend, Scope: limiter.User, Max: 60, Window: time.Minute},
	}
	if diff := cmp.Diff(wantLimits, c.limits()); diff != "" {
		t.Errorf("limits (-want +got):\n%s", diff)
	}
}

func TestConfigIsParsedStrictly(t *testing.T) {
	base, err := os.ReadFile("server.yaml")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		yaml string
		want []string // substrings of the error
	}{
		{"unknown_top_level_key", string(base) + "dryrun: false\n", []string{"line 24", "dryrun"}},
		{"unknown_tool_key", strings.Replace(string(base), "    cost_units: 1\n", "    cost_units: 1\n    readonly: true\n", 1), []string{"line 15", "readonly"}},
		{"unknown_rate_key", strings.Replace(string(base), "  window_seconds: 60", "  window_seconds: 60\n  burst: 3", 1), []string{"line 9", "burst"}},
		{"wrong_type", strings.Replace(string(base), "calls_per_min: 5", "calls_per_min: five", 1), []string{"line 6"}},
		{"missing_read_only", strings.Replace(string(base), "    read_only: true\n", "", 1), []string{"tools.search_docs.read_only is required"}},
		{"negative_cost", strings.Replace(string(base), "cost_units: 5", "cost_units: -5", 1), []string{"tools.create_ticket.cost_units"}},
		{"zero_calls", strings.Replace(string(base), "calls_per_min: 5", "calls_per_min: 0", 1), []string{"calls_per_min"}},
		{"zero_window", strings.Replace(string(base), "window_seconds: 60", "window_seconds: 0", 1), []string{"window_seconds"}},
		{"allowlist_unknown_tool", strings.Replace(string(base), "allowed_write_tools: []", "allowed_write_tools: [delete_all]", 1), []string{`"delete_all" is not a configured tool`}},
		{"allowlist_read_tool", strings.Replace(string(base), "allowed_write_tools: []", "allowed_write_tools: [search_docs]", 1), []string{`"search_docs" is a read-only tool`}},
		{"two_documents", string(base) + "---\ndry_run: false\n", []string{"more than one YAML document"}},
		{"empty", "", []string{"empty configuration"}},
		// A key given twice is refused, not read as its last value: a
		// second dry_run: false at the end would turn dry-run off.
		{"duplicate_top_level_key", string(base) + "dry_run: false\n", []string{"line 24", `"dry_run" already defined`}},
		{"duplicate_tool", strings.Replace(string(base), "  list_tools:\n", "  search_docs:\n    read_only: false\n    cost_units: 0\n  list_tools:\n", 1), []string{`"search_docs" already defined`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "server.yaml")
			if err := os.WriteFile(path, []byte(tt.yaml), 0o600); err != nil {
				t.Fatal(err)
			}
			_, _, err := loadConfig(path)
			if err == nil {
				t.Fatalf("loadConfig accepted:\n%s", tt.yaml)
			}
			for _, w := range append([]string{path}, tt.want...) {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

func TestRegistryCheckRefusesToStart(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*config)
		want   string
	}{
		{"tool_in_code_missing_from_config", func(c *config) { delete(c.Tools, "create_ticket") }, `tool "create_ticket" is implemented but missing from the tools section`},
		{"config_tool_without_code", func(c *config) {
			ro := true
			c.Tools["list_tickets"] = toolConfig{ReadOnly: &ro, CostUnits: 1}
		}, `tool "list_tickets" is configured but has no implementation`},
		{"write_tool_configured_read_only", func(c *config) {
			ro := true
			c.Tools["create_ticket"] = toolConfig{ReadOnly: &ro, CostUnits: 5}
		}, `tool "create_ticket": code declares read_only: false`},
		{"read_tool_configured_write", func(c *config) {
			ro := false
			c.Tools["search_docs"] = toolConfig{ReadOnly: &ro, CostUnits: 1}
		}, `tool "search_docs": code declares read_only: true`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := testConfig(t, tt.mutate)
			_, err := newApp(appOptions{ConfigName: "server.yaml", Config: c, AuditDir: t.TempDir()})
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "registry check failed") {
				t.Fatalf("newApp error = %v, want it to contain %q", err, tt.want)
			}
		})
	}
}

func TestRegistryDescribesEveryToolAndWritesDefaultOff(t *testing.T) {
	want := []registryEntry{
		{Name: "create_ticket", ReadOnly: false, Enabled: false, CostUnits: 5, Description: "Create a ticket in the downstream ticket system (write, allowlist-gated)."},
		{Name: "list_tools", ReadOnly: true, Enabled: true, CostUnits: 0, Description: "List the tool registry, every tool with its read/write class, cost and whether it is enabled (read-only)."},
		{Name: "search_docs", ReadOnly: true, Enabled: true, CostUnits: 1, Description: "Search internal docs visible to the calling user's team (read-only)."},
	}
	if diff := cmp.Diff(want, testConfig(t, nil).registry()); diff != "" {
		t.Errorf("registry (-want +got):\n%s", diff)
	}
	want[0].Enabled = true
	if diff := cmp.Diff(want, testConfig(t, allowWrites).registry()); diff != "" {
		t.Errorf("registry with create_ticket allowlisted (-want +got):\n%s", diff)
	}
}
