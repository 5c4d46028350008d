/* SPDX-License-Identifier: MIT */
/*
 * ps_pdread's memory: the core's PT_LOAD segments first (what the process
 * had written, and whatever else the kernel's coredump_filter or gcore
 * kept), then, for what the core left out, the file-backed segments of
 * the module there (libdwfl maps the files the core names at their load
 * addresses).  A read is whole or fails; reads that cross segments are
 * served piece by piece.
 */
#include <errno.h>
#include <gelf.h>
#include <string.h>
#include <unistd.h>

#include "core_private.h"

/* The core segment holding address, or NULL. */
static const struct tdcore_segment *segment_at(const struct ps_prochandle *ph, uint64_t address)
{
	size_t low = 0, high = ph->segment_count;

	while (low < high) {
		size_t middle = low + (high - low) / 2;
		const struct tdcore_segment *segment = &ph->segments[middle];

		if (address < segment->vaddr)
			high = middle;
		else if (address - segment->vaddr >= segment->memsz)
			low = middle + 1;
		else
			return segment;
	}
	return NULL;
}

/* Bytes at address the core itself holds (0: none), at most size. */
static size_t core_read(const struct ps_prochandle *ph, uint64_t address, void *buffer, size_t size)
{
	const struct tdcore_segment *segment = segment_at(ph, address);
	uint64_t into, offset, available;

	if (!segment)
		return 0;
	into = address - segment->vaddr;
	if (into >= segment->filesz)
		return 0;
	offset = segment->offset + into;
	/* A truncated core: what lies past its end is not there. */
	if (offset >= ph->file_size)
		return 0;
	available = segment->filesz - into;
	if (available > ph->file_size - offset)
		available = ph->file_size - offset;
	if (size > available)
		size = (size_t)available;
	for (size_t done = 0; done < size;) {
		ssize_t got = pread(ph->fd, (char *)buffer + done, size - done, (off_t)(offset + done));

		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			return done;
		done += (size_t)got;
	}
	return size;
}

/* Bytes at address that a module's file holds (0: none), at most size.
 * Caller holds dwfl_lock. */
static size_t module_read(struct ps_prochandle *ph, uint64_t address, void *buffer, size_t size)
{
	Dwfl_Module *module = dwfl_addrmodule(ph->dwfl, address);
	GElf_Addr bias;
	size_t phdr_count, file_size;
	const char *file;
	Elf *elf;

	if (!module || !(elf = dwfl_module_getelf(module, &bias)))
		return 0;
	if (elf_getphdrnum(elf, &phdr_count) != 0 || !(file = elf_rawfile(elf, &file_size)))
		return 0;
	for (size_t i = 0; i < phdr_count && i < TDCORE_SEGMENTS_MAX; i++) {
		GElf_Phdr phdr;
		uint64_t start, into, available;

		if (!gelf_getphdr(elf, (int)i, &phdr) || phdr.p_type != PT_LOAD)
			continue;
		start = phdr.p_vaddr + bias;
		if (address < start || address - start >= phdr.p_filesz)
			continue;
		into = address - start;
		if (phdr.p_offset > file_size || into > file_size - phdr.p_offset)
			return 0;
		available = phdr.p_filesz - into;
		if (available > file_size - phdr.p_offset - into)
			available = file_size - phdr.p_offset - into;
		if (size > available)
			size = (size_t)available;
		memcpy(buffer, file + phdr.p_offset + into, size);
		return size;
	}
	return 0;
}

ps_err_e tdcore_memory_read(struct ps_prochandle *ph, uint64_t address, void *buffer, size_t size)
{
	char *out = buffer;

	if (size > 0 && address > UINT64_MAX - (size - 1)) {
		tdcore_set_status(ph, TDCORE_NOT_IN_CORE);
		return PS_ERR;
	}
	while (size > 0) {
		size_t got = core_read(ph, address, out, size);

		if (got == 0) {
			pthread_mutex_lock(&ph->dwfl_lock);
			got = module_read(ph, address, out, size);
			pthread_mutex_unlock(&ph->dwfl_lock);
		}
		if (got == 0) {
			tdcore_set_status(ph, TDCORE_NOT_IN_CORE);
			return PS_ERR;
		}
		address += got;
		out += got;
		size -= got;
	}
	return PS_OK;
}
