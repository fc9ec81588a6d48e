#!/bin/sh
# beam-boot-wrapper.sh: the command of prism's PROCESS environment
# (--environment_config='{"command":"/path/to/beam-boot-wrapper.sh"}'). It
# runs the Go SDK's boot program (github.com/apache/beam/sdks/v2/go/container),
# which must sit next to it as "boot" (or be named by $PWSD_BEAM_BOOT).
#
# Works around a bug of prism v2.77.0: its PROCESS environment starts the
# command with --id='ID', the quotes literal (exec.Command, no shell:
# runners/prism/internal/environments.go, processEnvironment), so boot
# presents the worker id with quotes and prism does not recognise the
# worker. The wrapper strips them. With $PWSD_BEAM_WORKDIR set (in the job
# server's environment, which prism passes on) boot stages artifacts there
# instead of /tmp/staged.
set -eu
boot=${PWSD_BEAM_BOOT:-$(dirname "$0")/boot}
for a do
	shift
	case $a in
	--id=\'*\') a=--id=${a#--id=\'}; a=${a%\'} ;;
	esac
	set -- "$@" "$a"
done
if [ -n "${PWSD_BEAM_WORKDIR:-}" ]; then
	set -- "$@" "--semi_persist_dir=$PWSD_BEAM_WORKDIR"
fi
exec "$boot" "$@"
