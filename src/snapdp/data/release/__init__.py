"""The release (docs/data.md): the one release session (:mod:`.session`) over the release core
(:mod:`.core`), the table door :class:`~snapdp.data.release.table.PrivateTable` (:mod:`.table`)
and plan runs (:mod:`.run`). It sits above the planner, whose preview it follows."""
