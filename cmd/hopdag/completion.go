package main

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/hopdag/hopdag"
	"github.com/hopdag/hopdag/release"
)

// Shell completion is cobra's: hopdag completion bash|zsh|fish|powershell
// prints the script, with descriptions (--no-descriptions leaves them
// out). The scripts ask the binary itself (hopdag __complete ...) for the
// words, so the completion of a flag is written once, here, for every
// shell: the catalog's versions after --from and --to (on a catalog of
// several tracks, its states' TRACK=VERSION pairs), the catalog's risks
// after --accept (described by their message), the formats of -o, the
// words of the flags that take one of a few (wordFlags), and directories
// for the catalog argument. The catalog is the command's first argument;
// a catalog that does not load completes to nothing rather than to an
// error.

// addCompletion describes the completion command in hopdag's terms.
func addCompletion(root *cobra.Command) {
	root.InitDefaultCompletionCmd()
	for _, cmd := range root.Commands() {
		if cmd.Name() == "completion" {
			// hopdag completion alone, or of another shell: a usage error.
			cmd.Args = cobra.ArbitraryArgs
			cmd.RunE = func(_ *cobra.Command, args []string) error {
				if len(args) == 0 {
					return errors.New("want bash, zsh, fish or powershell")
				}
				return fmt.Errorf("want bash, zsh, fish or powershell, got %q", args[0])
			}
			cmd.Short = "print a shell completion script: bash, zsh, fish or powershell"
			cmd.Example = `  source <(hopdag completion bash)
  hopdag completion zsh > "${fpath[1]}/_hopdag"
  hopdag completion fish > ~/.config/fish/completions/hopdag.fish
  hopdag completion powershell | Out-String | Invoke-Expression`
		}
	}
}

// outputFormats are the values of -o, by command, as its help lists them.
var outputFormats = map[string][]string{
	"validate":     {"text", "json", "yaml"},
	"targets":      {"text", "json", "yaml"},
	"plan":         {"text", "json", "yaml"},
	"graph":        {"mermaid", "dot", "json", "yaml"},
	"run":          {"text", "json", "yaml"},
	"rollback":     {"text", "json", "yaml"},
	"status":       {"table", "json", "yaml"},
	"version":      {"text", "json", "yaml"},
	"rollout plan": {"text", "json", "yaml"},
}

// wordFlags take one of a few words, whatever the command.
var wordFlags = map[string][]string{
	"mode":       {"eager\tstart each component as soon as its dependencies are done", "batch\tstart a batch when the whole previous batch is done"},
	"log-format": {"text\tlines for people", "json\tone JSON record a line"},
	"on-failure": {"rollback\tundo the failed hop, dependents first", "rollback-run\tundo the whole run"},
	"verify":     {"required\ta bundle must carry a signature", "optional\tan unsigned bundle is accepted"},
}

// complete registers the dynamic completions of c's command.
func (c *cli) complete(cmd *cobra.Command) {
	if c.bundle != nil {
		cmd.ValidArgsFunction = func(_ *cobra.Command, args []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
			if len(args) > 0 {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			return nil, cobra.ShellCompDirectiveFilterDirs
		}
	} else {
		cmd.ValidArgsFunction = cobra.NoFileCompletions
	}
	for _, name := range []string{"from", "to"} {
		if c.fs.Lookup(name) != nil {
			cmd.RegisterFlagCompletionFunc(name, func(_ *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
				return stateWords(catalogVersions(args), toComplete), cobra.ShellCompDirectiveNoFileComp
			})
		}
	}
	if c.fs.Lookup("accept") != nil {
		cmd.RegisterFlagCompletionFunc("accept", func(_ *cobra.Command, args []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
			return catalogRisks(args), cobra.ShellCompDirectiveNoFileComp
		})
	}
	if formats, ok := outputFormats[c.name]; ok {
		cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions(formats, cobra.ShellCompDirectiveNoFileComp))
	}
	for _, name := range slices.Sorted(maps.Keys(wordFlags)) {
		if c.fs.Lookup(name) != nil {
			cmd.RegisterFlagCompletionFunc(name, cobra.FixedCompletions(wordFlags[name], cobra.ShellCompDirectiveNoFileComp))
		}
	}
}

// completionCatalog loads the catalog named by the command's first
// argument (nil when there is none or it does not load).
func completionCatalog(args []string) *release.Catalog {
	if len(args) == 0 {
		return nil
	}
	var (
		cat *release.Catalog
		err error
	)
	if args[0] == "-" {
		cat, err = release.Load(hopdag.SampleCatalog())
	} else {
		cat, err = release.LoadDir(args[0])
	}
	if err != nil {
		return nil
	}
	return cat
}

// catalogVersions are the versions of the catalog args[0], ascending, each
// described by its release name (on a catalog of several tracks, as
// TRACK=VERSION, the form --from and --to take there, by track).
func catalogVersions(args []string) []cobra.Completion {
	cat := completionCatalog(args)
	if cat == nil {
		return nil
	}
	byTrack := map[string]map[string]*release.Release{}
	for _, r := range cat.Releases {
		if byTrack[r.Track] == nil {
			byTrack[r.Track] = map[string]*release.Release{}
		}
		byTrack[r.Track][r.Version.Original()] = &r
	}
	var out []cobra.Completion
	for _, track := range slices.Sorted(maps.Keys(byTrack)) {
		rs := slices.Collect(maps.Values(byTrack[track]))
		slices.SortFunc(rs, func(a, b *release.Release) int { return a.Version.Compare(b.Version) })
		for _, r := range rs {
			word := r.Version.Original()
			if len(byTrack) > 1 {
				word = track + "=" + word
			}
			out = append(out, cobra.CompletionWithDesc(word, "release "+r.Name))
		}
	}
	return out
}

// stateWords completes the last TRACK=VERSION of a state being typed
// (platform=13.01.0,kube...): each of words whose track the state does not
// name yet, after what comes before the last comma.
func stateWords(words []cobra.Completion, toComplete string) []cobra.Completion {
	i := strings.LastIndex(toComplete, ",")
	if i < 0 {
		return words
	}
	before := toComplete[:i+1]
	named := map[string]bool{}
	for pair := range strings.SplitSeq(toComplete[:i], ",") {
		track, _, _ := strings.Cut(pair, "=")
		named[track] = true
	}
	var out []cobra.Completion
	for _, w := range words {
		if track, _, ok := strings.Cut(w, "="); ok && !named[track] {
			out = append(out, before+w)
		}
	}
	return out
}

// catalogRisks are the risks the catalog args[0] declares, sorted, each
// described by its message.
func catalogRisks(args []string) []cobra.Completion {
	cat := completionCatalog(args)
	if cat == nil {
		return nil
	}
	msgs := map[string]string{}
	for _, p := range cat.Paths {
		for _, r := range p.Rules {
			for _, risk := range r.Risks {
				if _, ok := msgs[risk.Name]; !ok {
					msgs[risk.Name] = strings.ReplaceAll(risk.Message, "\n", " ")
				}
			}
		}
	}
	var out []cobra.Completion
	for _, name := range slices.Sorted(maps.Keys(msgs)) {
		out = append(out, cobra.CompletionWithDesc(name, msgs[name]))
	}
	return out
}
