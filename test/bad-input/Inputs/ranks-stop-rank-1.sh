#!/bin/sh
# Runs "$@" on every rank of an OpenMPI job but rank 1, which stops itself
# (SIGSTOP) first, so that it never starts: as a process stopped by a
# debugger or a node that never schedules it would.
if [ "$OMPI_COMM_WORLD_RANK" = 1 ]; then
  kill -STOP $$
fi
exec "$@"
