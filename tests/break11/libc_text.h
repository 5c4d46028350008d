/* SPDX-License-Identifier: MIT */
/*
 * libc's executable segment, the one range syscall user dispatch lets
 * system calls come from in the break11 dispatch tests (dispatch.c,
 * dispatch_futex.c): a shim that makes a system call of its own is then
 * caught.
 */
#ifndef TDSTAT_TESTS_LIBC_TEXT_H
#define TDSTAT_TESTS_LIBC_TEXT_H

#include <link.h>
#include <stdint.h>
#include <string.h>

struct libc_text {
	uintptr_t start, end;
};

static int libc_text_visit(struct dl_phdr_info *object, size_t size, void *data)
{
	struct libc_text *text = data;

	(void)size;
	if (!strstr(object->dlpi_name, "/libc.so.6"))
		return 0;
	for (int i = 0; i < object->dlpi_phnum; i++) {
		const ElfW(Phdr) *header = &object->dlpi_phdr[i];

		if (header->p_type == PT_LOAD && (header->p_flags & PF_X)) {
			text->start = object->dlpi_addr + header->p_vaddr;
			text->end = text->start + header->p_memsz;
			return 1;
		}
	}
	return 0;
}

/* libc's text; start 0 when it is not found. */
static inline struct libc_text libc_text_find(void)
{
	struct libc_text text = { 0, 0 };

	dl_iterate_phdr(libc_text_visit, &text);
	return text;
}

#endif
