"""Launchers, registered by name: emulator, sglang-cpu, local, docker, slurm, multi-node, external."""

from . import docker, emulator, external, local, multinode, sglang_cpu, slurm
from .base import LAUNCHERS, LaunchContext, Launcher, NoOptions, free_port, get_launcher, launcher_class, register
from .docker import docker_command
from .emulator import EmulatorOptions, emulator_argv
from .local import local_command
from .multinode import multinode_steps, write_node_scripts
from .slurm import SlurmOptions

__all__ = [
    "EmulatorOptions",
    "LAUNCHERS",
    "LaunchContext",
    "Launcher",
    "NoOptions",
    "SlurmOptions",
    "docker",
    "docker_command",
    "emulator",
    "emulator_argv",
    "external",
    "free_port",
    "get_launcher",
    "launcher_class",
    "local",
    "local_command",
    "multinode",
    "multinode_steps",
    "register",
    "sglang_cpu",
    "slurm",
    "write_node_scripts",
]
