package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gmcn-go/gmcn/runspec"
)

// bin is the gmcn binary built once for the tests that run it.
var bin string

func TestMain(m *testing.M) {
	os.Exit(buildAndRun(m))
}

// buildAndRun builds the command into a temporary directory and runs the
// tests.
func buildAndRun(m *testing.M) int {
	dir, err := os.MkdirTemp("", "gmcn-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	bin = filepath.Join(dir, "gmcn")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building gmcn: %v\n%s", err, out)
		return 1
	}
	return m.Run()
}

// result is what one run of the binary gave.
type result struct {
	stdout, stderr string
	code           int
}

// gmcn runs the binary with args in the directory dir.
func gmcn(t *testing.T, dir string, args ...string) result {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("gmcn %q: %v", args, err)
	}
	return result{stdout.String(), stderr.String(), cmd.ProcessState.ExitCode()}
}

// existingRun writes a run directory holding a run.json and a checkpoint
// (not a valid one: the commands under test must fail before reading it)
// and returns it.
func existingRun(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "run")
	if err := runspec.SaveConfig(dir, runspec.Presets["demo"]); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, runspec.CheckpointFile), []byte("not a checkpoint"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// stoppedRun writes what a training killed before its first checkpoint
// leaves (run.json and an empty steps.csv) and returns its directory.
func stoppedRun(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "stopped")
	if err := runspec.SaveConfig(dir, runspec.Presets["demo"]); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, runspec.StepsFile), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// snapshot returns every file under dir with its content.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	files := map[string]string{}
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		files[path] = string(data)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// TestBadCommandLines runs the binary on command lines that must fail: each
// must exit with the status given, print exactly one line on standard error
// (the error, with what it names), nothing on standard output, never a Go
// panic, and leave the working directory and an existing run as they were.
// {run} stands for an existing run directory, {new} for a fresh one.
func TestBadCommandLines(t *testing.T) {
	for _, c := range []struct {
		args string
		code int
		want string
	}{
		{"nope", 2, `unknown command "nope"; run gmcn help`},
		{"help nope", 2, `unknown command "nope"`},
		{"help train eval", 2, "want one command"},
		{"train --epochs -3", 2, `"-3" for flag --epochs: want a value in [1, 1000000]`},
		{"train --epochs 0", 2, "-epochs"},
		{"train --epochs many", 2, "-epochs"},
		{"train --batch -5", 2, `"-5" for flag --batch`},
		{"train --lr -1", 2, `"-1" for flag --lr: want a value in (0, 1]`},
		{"train --fused 16 --fused-negative 0", 2, `"0" for flag --fused-negative: want a value in (0, 1e+06]`},
		{"train --fused 16 --fused-min 0", 2, `"0" for flag --fused-min: want a value in [1, 1048576]`},
		{"train --lr 0", 2, "-lr"},
		{"train --lr NaN", 2, `"NaN" for flag --lr`},
		{"train --lr Inf", 2, "-lr"},
		{"train --lr 1e9", 2, `"1e9" for flag --lr`},
		{"train --seed -7", 2, `"-7" for flag --seed`},
		{"train --dense -2", 2, "-dense"},
		{"train --weight-decay -0.5", 2, "-weight-decay"},
		{"train --weight-decay NaN", 2, "-weight-decay"},
		{"train --fit-em -2", 2, "-fit-em"},
		{"train --fit-points -100", 2, "-fit-points"},
		{"train --train-limit -5", 2, "-train-limit"},
		{"train --test-limit -1", 2, "-test-limit"},
		{"train --fused -2", 2, "-fused"},
		{"train --accumulate 0", 2, `"0" for flag --accumulate: want a value in [1, 10000]`},
		{"train --accumulate -2", 2, "-accumulate"},
		{"train --kernel-gaussians 0", 2, "-kernel-gaussians"},
		{"train --checkpoint-every 5x", 2, "-checkpoint-every"},
		{"train --checkpoint-every -1s", 2, "-checkpoint-every"},
		{"train --foo", 2, "flag provided but not defined: --foo; run gmcn help train"},
		{"train --epochs", 2, "flag needs an argument: --epochs"},
		{"train --preset nope", 2, `--preset "nope": want one of demo,`},
		{"train --dataset nope", 2, `unknown dataset "nope"`},
		{"train --layers garbage", 2, `layer string "garbage"`},
		{"train --layers 1/16->0", 2, "channel count must be a positive integer"},
		{"train --layers", 2, "flag needs an argument"},
		{"train --radii x", 2, `--radii "x": "x" is not a finite number > 0`},
		{"train --radii 1,2", 2, "2 radii for 3 blocks"},
		{"train --radii 1,NaN,2", 2, `"NaN" is not a finite number`},
		{"train --reduction nope", 2, `unknown reduction "nope"`},
		{"train --bias nope", 2, `unknown bias type "nope"`},
		{"train --fit-init fps", 2, "fps"},
		{"train --device tpu", 2, `--device "tpu": this build has`},
		{"eval --run {run} --device cuda", 2, `--device "cuda": this build has cpu (cuda needs a build with -tags gmcuda`},
		{"render --run {run} --device cuda", 2, `--device "cuda": this build has cpu (cuda needs a build with -tags gmcuda`},
		{"export --run {run} --device cuda", 2, `--device "cuda": this build has cpu (cuda needs a build with -tags gmcuda`},
		{"predict --run {run} --device cuda x.png", 2, `--device "cuda": this build has cpu (cuda needs a build with -tags gmcuda`},
		{"train --root a --data b", 2, "disagree"},
		{"train --layers 1/16->8/8->16/4->7", 2, "end in 7 channels but mnist has 10 classes"},
		{"train --layers 1/16->8/2000->10", 2, "block 1 reduces 80 Gaussians per channel to 2000 with TreeHEM(T=2): output size Np = 2000 must be in [1, 1024]"},
		{"train --layers 1/16->8/100->10 --reduction max", 2, "block 1 reduces 80 Gaussians per channel to 100 with KeepLargest: the number of kept components np must be in [1, N = 80]"},
		{"train --dataset modelnet40 --preset modelnet-cpu", 2, "end in 10 channels but modelnet40 has 40 classes"},
		{"train myrun --epochs 1", 2, `unexpected argument "myrun": every setting is a flag (a run's directory is --out DIR)`},
		{"train --resume --lr 0.1 --layers 1/8->10", 2, "--layers, --lr cannot change it (only --epochs and --accumulate can)"},
		{"train --resume --overwrite", 2, "give one"},
		{"train --out {run}", 1, "already holds a run (checkpoint.gmcn); continue it with --resume or replace it with --overwrite"},
		{"train --out {run} --epochs 1 --layers 1/8->4/4->10", 1, "already holds a run"},
		{"train --resume --out {new}", 1, "run.json"},
		{"train --out {file}", 1, "is a file, not a run directory"},
		{"train --out {new} --layers 1/16->100000/8->10", 1, "the run needs about 1.4 TB of memory (batch 50; largest intermediate: block 2: 50 × 10 mixtures of 4000000 Gaussians, 56.0 GB), more than the "},
		{"train --out {new} --max-memory 1M --train-limit 10 --batch 10", 1, "more than the 1.0 MB --max-memory"},
		{"train --max-memory lots", 2, `"lots" for flag --max-memory`},
		{"train --batch 100000 --train-limit 20", 2, "batch 100000 is larger than the 20 training samples train_limit keeps"},
		{"train --out {file}/run", 1, "creating the run directory"},
		{"train --out {stopped}", 1, "holds a run that stopped before its first checkpoint (run.json, no checkpoint.gmcn): there is nothing to resume; start it again with --overwrite"},
		{"train --out {stopped} --resume", 1, "start it again with --overwrite"},
		{"eval --run {stopped}", 1, "has no checkpoint: its training stopped before the first one, or never ran; gmcn train --out"},
		{"train --out {new} --data {new}/nowhere --train-limit 10 --batch 10", 1, "the data folder {new}/nowhere does not exist or is not a folder: the folder given with --data"},
		{"fit-inputs --lr 0.1", 2, "flag provided but not defined: --lr"},
		{"fit-inputs --epochs 3", 2, "-epochs"},
		{"fit-inputs extra", 2, `unexpected argument "extra"`},
		{"eval runs/x", 2, `unexpected argument "runs/x": every setting is a flag (a run's directory is --run DIR)`},
		{"eval --run {new}", 1, "run.json"},
		{"eval --run {new} --out {run}", 2, "disagree"},
		{"eval --test-limit -1", 2, "-test-limit"},
		{"eval --lr 1", 2, "-lr"},
		{"render --inputs 0", 2, `"0" for flag --inputs: want a value in [1, 10000]`},
		{"render --inputs -3", 2, "-inputs"},
		{"render --size 0", 2, "-size"},
		{"render --size 100000", 2, "-size"},
		{"render --out {new}", 1, "run.json"},
		{"render {run}", 2, "--run DIR"},
		{"gen-shapes --train 0", 2, "-train"},
		{"gen-shapes somewhere", 2, "the output directory is --out DIR"},
		{"presets extra", 2, "this command takes no arguments"},
		{"version --verbose", 2, "-verbose"},
	} {
		t.Run(c.args, func(t *testing.T) {
			work, run, fresh := t.TempDir(), existingRun(t), filepath.Join(t.TempDir(), "fresh")
			stopped, file := stoppedRun(t), filepath.Join(t.TempDir(), "file")
			if err := os.WriteFile(file, []byte("not a run"), 0o644); err != nil {
				t.Fatal(err)
			}
			places := strings.NewReplacer("{run}", run, "{new}", fresh, "{stopped}", stopped, "{file}", file)
			args, want := strings.Fields(places.Replace(c.args)), places.Replace(c.want)
			before, beforeStopped := snapshot(t, run), snapshot(t, stopped)
			r := gmcn(t, work, args...)
			if r.code != c.code {
				t.Errorf("exit status %d, want %d", r.code, c.code)
			}
			msg := strings.TrimSuffix(r.stderr, "\n")
			if msg == "" || strings.Contains(msg, "\n") || !strings.Contains(msg, want) {
				t.Errorf("standard error %q, want one line containing %q", r.stderr, want)
			}
			if r.stdout != "" {
				t.Errorf("standard output %q, want nothing", r.stdout)
			}
			if out := r.stdout + r.stderr; strings.Contains(out, "panic") || strings.Contains(out, "goroutine") {
				t.Errorf("a Go panic:\n%s", out)
			}
			if left, _ := os.ReadDir(work); len(left) > 0 {
				t.Errorf("the working directory holds %v, want nothing", left)
			}
			if _, err := os.Stat(fresh); err == nil {
				t.Errorf("%s was created", fresh)
			}
			unchanged(t, before, snapshot(t, run))
			unchanged(t, beforeStopped, snapshot(t, stopped))
			if data, err := os.ReadFile(file); err != nil || string(data) != "not a run" {
				t.Errorf("the file given as --out changed: %q, %v", data, err)
			}
		})
	}
}

// unchanged fails t unless the snapshots before and after are equal.
func unchanged(t *testing.T, before, after map[string]string) {
	t.Helper()
	for path, data := range before {
		if after[path] != data {
			t.Errorf("%s changed", path)
		}
	}
	if len(after) != len(before) {
		t.Errorf("the existing run holds %d files, had %d", len(after), len(before))
	}
}

// TestHelp requires every way of asking for help to print on standard
// output and exit 0, and each command's help to list its own flags only.
func TestHelp(t *testing.T) {
	for _, c := range []struct {
		args    string
		want    []string
		notWant []string
	}{
		{"help", []string{"Commands:", "train", "version"}, nil},
		{"-h", []string{"Commands:"}, nil},
		{"-help", []string{"Commands:"}, nil},
		{"--help", []string{"Commands:"}, nil},
		{"help train", []string{"Usage: gmcn train", "--lr RATE", "--kernel-gaussians N_k", "--checkpoint-every DURATION", "--overwrite", "Optimisation flags:"}, []string{"(default -1)", "(default 0)"}},
		{"train --help", []string{"Usage: gmcn train", "--epochs N"}, nil},
		{"train -h", []string{"Usage: gmcn train"}, nil},
		{"fit-inputs --help", []string{"--layers MODEL", "--fit-em N", "--train-limit N"}, []string{"--lr", "--epochs", "--batch", "--radii", "--out", "--resume"}},
		{"eval --help", []string{"--run DIR", "--out DIR", "--test-limit N"}, []string{"--lr", "--layers"}},
		{"render -h", []string{"--inputs N", "--size PIXELS", "(default 16)"}, []string{"--lr"}},
		{"gen-shapes --help", []string{"--train N"}, nil},
		{"presets --help", []string{"Usage: gmcn presets"}, nil},
		{"version", []string{"gmcn ", "go ", "simd", "devices   cpu"}, nil},
		{"presets", []string{"demo:", "paper:"}, nil},
	} {
		t.Run(c.args, func(t *testing.T) {
			r := gmcn(t, t.TempDir(), strings.Fields(c.args)...)
			if r.code != 0 || r.stderr != "" {
				t.Errorf("exit status %d, standard error %q; want 0 and nothing", r.code, r.stderr)
			}
			for _, w := range c.want {
				if !strings.Contains(r.stdout, w) {
					t.Errorf("standard output lacks %q:\n%s", w, r.stdout)
				}
			}
			for _, w := range c.notWant {
				if strings.Contains(r.stdout, w) {
					t.Errorf("standard output has %q:\n%s", w, r.stdout)
				}
			}
		})
	}
}

// TestLauncherWithoutMPI starts the default build (no MPI) as if it were
// one of two ranks of mpirun: it must refuse rather than train the whole
// run twice into one folder.
func TestLauncherWithoutMPI(t *testing.T) {
	out := filepath.Join(t.TempDir(), "run")
	cmd := exec.Command(bin, "train", "--out", out, "--epochs", "1")
	cmd.Env = append(os.Environ(), "OMPI_COMM_WORLD_SIZE=2")
	b, err := cmd.CombinedOutput()
	if code := cmd.ProcessState.ExitCode(); err == nil || code != 1 || !strings.Contains(string(b), "built without MPI; build with `make build-mpi`") {
		t.Errorf("exit %d, output %q; want 1 and the MPI build's name", code, b)
	}
	if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the refused run created %s", out)
	}
}
