package main

import (
	"context"
	"flag"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/hopdag/hopdag"
	"github.com/hopdag/hopdag/release"
)

// completion prints a completion script for bash or zsh. The script
// completes commands, each command's flags, file names where a flag takes
// a path, the words of -o and of the flags that take one of a few
// (outputFormats, wordFlags), and the catalog's versions after --from and --to: it asks
// `hopdag completion versions DIR` for them, DIR being the catalog named on
// the command line.
func (c *cli) completion(ctx context.Context) int {
	args := c.fs.Args()
	if len(args) == 2 && args[0] == "versions" {
		return c.completeVersions(args[1])
	}
	if len(args) != 1 {
		return c.usageError("want bash or zsh")
	}
	switch args[0] {
	case "bash":
		fmt.Fprint(c.stdout, bashCompletion(c.commands))
	case "zsh":
		fmt.Fprint(c.stdout, "# zsh completion for hopdag: source <(hopdag completion zsh)\n"+
			"autoload -U +X bashcompinit && bashcompinit\n", bashCompletion(c.commands))
	default:
		return c.usageError(fmt.Sprintf("want bash or zsh, got %q", args[0]))
	}
	return exitOK
}

// completeVersions prints the versions of the catalog in dir, one a line,
// ascending (on a catalog of several tracks, as TRACK=VERSION, the form
// --from and --to take there, by track); nothing (and exit 0) when it does not load, so that a
// half-typed command line completes to nothing rather than to an error.
func (c *cli) completeVersions(dir string) int {
	var (
		cat *release.Catalog
		err error
	)
	if dir == "-" {
		cat, err = release.Load(hopdag.SampleCatalog())
	} else {
		cat, err = release.LoadDir(dir)
	}
	if err != nil {
		return exitOK
	}
	byTrack := map[string]map[string]release.Version{}
	for _, r := range cat.Releases {
		if byTrack[r.Track] == nil {
			byTrack[r.Track] = map[string]release.Version{}
		}
		byTrack[r.Track][r.Version.Original()] = r.Version
	}
	for _, track := range slices.Sorted(maps.Keys(byTrack)) {
		vs := slices.Collect(maps.Values(byTrack[track]))
		slices.SortFunc(vs, func(a, b release.Version) int { return a.Compare(b) })
		for _, v := range vs {
			if len(byTrack) > 1 {
				fmt.Fprintln(c.stdout, track+"="+v.Original())
			} else {
				fmt.Fprintln(c.stdout, v.Original())
			}
		}
	}
	return exitOK
}

// pathFlags take a file or directory name.
var pathFlags = []string{"state", "apply-dir", "log-file", "kubeconfig", "verify-key", "cache", "docker-config"}

// outputFormats are the values of -o, by command, as its help lists them.
var outputFormats = map[string][]string{
	"plan":   {"text", "json", "yaml"},
	"graph":  {"mermaid", "dot", "json"},
	"status": {"table", "json", "yaml"},
}

// wordFlags take one of a few words, whatever the command.
var wordFlags = map[string][]string{
	"mode":       {"eager", "batch"},
	"log-format": {"text", "json"},
	"on-failure": {"rollback", "rollback-run"},
	"verify":     {"required", "optional"},
}

// wordCases is the script's case arms that complete the words of -o (by
// command) and of wordFlags.
func wordCases() string {
	var b strings.Builder
	b.WriteString("    -o|--o)\n      case \"$cmd\" in\n")
	for _, name := range slices.Sorted(maps.Keys(outputFormats)) {
		fmt.Fprintf(&b, "        %s) COMPREPLY=($(compgen -W %q -- \"$cur\")) ;;\n", name, strings.Join(outputFormats[name], " "))
	}
	b.WriteString("      esac\n      return ;;\n")
	for _, name := range slices.Sorted(maps.Keys(wordFlags)) {
		fmt.Fprintf(&b, "    --%s|-%s)\n      COMPREPLY=($(compgen -W %q -- \"$cur\"))\n      return ;;\n", name, name, strings.Join(wordFlags[name], " "))
	}
	return b.String()
}

func bashCompletion(commands map[string]command) string {
	names := slices.Sorted(maps.Keys(commands))
	words := slices.Sorted(slices.Values(append(slices.Clone(names), "bundle")))
	var cases strings.Builder
	for _, name := range names {
		c := newCLI(env{}, name, commands[name])
		var flags []string
		c.fs.VisitAll(func(f *flag.Flag) {
			if len(f.Name) == 1 {
				flags = append(flags, "-"+f.Name)
			} else {
				flags = append(flags, "--"+f.Name)
			}
		})
		fmt.Fprintf(&cases, "    %s) flags=%q ;;\n", name, strings.Join(flags, " "))
	}
	var paths []string
	for _, f := range pathFlags {
		paths = append(paths, "--"+f, "-"+f)
	}
	return fmt.Sprintf(`# bash completion for hopdag: eval "$(hopdag completion bash)"
_hopdag() {
  local cur prev cmd flags dir
  cur="${COMP_WORDS[COMP_CWORD]}"
  prev="${COMP_WORDS[COMP_CWORD-1]}"
  if [ "$COMP_CWORD" -eq 1 ]; then
    COMPREPLY=($(compgen -W %q -- "$cur"))
    return
  fi
  cmd="${COMP_WORDS[1]}"
  case "$prev" in
    --from|-from|--to|-to)
      dir="${COMP_WORDS[2]}"
      COMPREPLY=($(compgen -W "$("${COMP_WORDS[0]}" completion versions "$dir" 2>/dev/null)" -- "$cur"))
      return ;;
    %s)
      COMPREPLY=($(compgen -f -- "$cur"))
      return ;;
%s  esac
  case "$cmd" in
%s    *) flags="" ;;
  esac
  if [[ "$cur" == -* ]]; then
    COMPREPLY=($(compgen -W "$flags" -- "$cur"))
  elif [ "$cmd" = completion ]; then
    COMPREPLY=($(compgen -W "bash zsh" -- "$cur"))
  elif [ "$cmd" = bundle ] && [ "$COMP_CWORD" -eq 2 ]; then
    COMPREPLY=($(compgen -W "copy export keygen pull push" -- "$cur"))
  else
    COMPREPLY=($(compgen -d -- "$cur"))
  fi
}
complete -F _hopdag hopdag
`, strings.Join(words, " "), strings.Join(paths, "|"), wordCases(), cases.String())
}
