/* SPDX-License-Identifier: MIT */
/* A debugger's own proc_service routines (own_proc_service.h). */
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "own_proc_service.h"


/* The symbol's offset from the file's first loadable address, or 0. */
static uintptr_t file_symbol(const char *path, const char *name, uintptr_t *first_vaddr)
{
	uintptr_t found = 0;
	struct stat info;
	ElfW(Ehdr) *header;
	unsigned char *file;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return 0;
	if (fstat(fd, &info) != 0 || (size_t)info.st_size < sizeof(ElfW(Ehdr))) {
		close(fd);
		return 0;
	}
	file = mmap(NULL, (size_t)info.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (file == MAP_FAILED)
		return 0;
	header = (ElfW(Ehdr) *)file;
	if (memcmp(header->e_ident, ELFMAG, SELFMAG) == 0 && header->e_shoff &&
	    header->e_shoff + (uint64_t)header->e_shnum * sizeof(ElfW(Shdr)) <= (uint64_t)info.st_size) {
		ElfW(Shdr) *sections = (ElfW(Shdr) *)(file + header->e_shoff);
		ElfW(Phdr) *phdrs = (ElfW(Phdr) *)(file + header->e_phoff);

		*first_vaddr = UINTPTR_MAX;
		for (int i = 0; i < header->e_phnum; i++)
			if (phdrs[i].p_type == PT_LOAD && *first_vaddr == UINTPTR_MAX)
				*first_vaddr = phdrs[i].p_vaddr & ~(uintptr_t)4095;
		for (int i = 0; i < header->e_shnum && !found; i++) {
			ElfW(Shdr) *strings;
			ElfW(Sym) *symbols;

			if (sections[i].sh_type != SHT_DYNSYM || sections[i].sh_link >= header->e_shnum)
				continue;
			strings = &sections[sections[i].sh_link];
			symbols = (ElfW(Sym) *)(file + sections[i].sh_offset);
			for (size_t j = 0; j < sections[i].sh_size / sizeof(ElfW(Sym)); j++) {
				if (symbols[j].st_shndx != SHN_UNDEF && symbols[j].st_name < strings->sh_size &&
				    strcmp((char *)file + strings->sh_offset + symbols[j].st_name, name) == 0) {
					found = symbols[j].st_value;
					break;
				}
			}
		}
	}
	munmap(file, (size_t)info.st_size);
	return found;
}

ps_err_e ps_pglobal_lookup(struct ps_prochandle *ph, const char *object_name, const char *sym_name,
			   psaddr_t *sym_addr)
{
	char path[64], line[4096];
	FILE *maps;

	(void)object_name; /* gdb ignores it too */
	ph->lookups++;
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)ph->pid);
	maps = fopen(path, "r");
	if (!maps)
		return PS_ERR;
	while (fgets(line, sizeof(line), maps)) {
		unsigned long start, offset;
		int name_at = 0;
		uintptr_t value, first_vaddr = 0;

		if (sscanf(line, "%lx-%*x %*s %lx %*s %*s %n", &start, &offset, &name_at) < 2 || !name_at ||
		    offset != 0 || line[name_at] != '/')
			continue;
		line[strcspn(line, "\n")] = '\0';
		value = file_symbol(line + name_at, sym_name, &first_vaddr);
		if (value) {
			*sym_addr = (psaddr_t)(start - first_vaddr + value);
			fclose(maps);
			return PS_OK;
		}
	}
	fclose(maps);
	return PS_NOSYM;
}

ps_err_e ps_pdread(struct ps_prochandle *ph, psaddr_t address, void *buffer, size_t size)
{
	struct iovec local = { buffer, size }, remote = { address, size };

	if (ph->fail_reads)
		return PS_ERR;
	if (process_vm_readv(ph->pid, &local, 1, &remote, 1, 0) != (ssize_t)size)
		return PS_ERR;
	ph->reads++;
	if (ph->after_read)
		ph->after_read(ph);
	return PS_OK;
}

ps_err_e ps_pdwrite(struct ps_prochandle *ph, psaddr_t address, const void *buffer, size_t size)
{
	struct iovec local = { (void *)buffer, size }, remote = { address, size };

	return process_vm_writev(ph->pid, &local, 1, &remote, 1, 0) == (ssize_t)size ? PS_OK : PS_ERR;
}

ps_err_e ps_ptread(struct ps_prochandle *ph, psaddr_t address, void *buffer, size_t size)
{
	return ps_pdread(ph, address, buffer, size);
}

ps_err_e ps_ptwrite(struct ps_prochandle *ph, psaddr_t address, const void *buffer, size_t size)
{
	return ps_pdwrite(ph, address, buffer, size);
}

pid_t ps_getpid(struct ps_prochandle *ph)
{
	return ph->pid;
}
