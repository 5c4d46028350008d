/* SPDX-License-Identifier: MIT */
#include "fake_target.h"

#include <tdstat/clock.h>

#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

uint64_t fake_monotonic_ns(void)
{
	return tdstat_monotonic_ns();
}

void fake_target_init(struct ps_prochandle *ph, uint32_t capacity, uint32_t used)
{
	struct tdstat_region_header *header;
	uint64_t now = fake_monotonic_ns();

	memset(ph, 0, sizeof(*ph));
	pthread_mutex_init(&ph->lock, NULL);
	ph->image_size = sizeof(*header) + (size_t)capacity * (sizeof(struct tdstat_record) + sizeof(struct tdstat_detail));
	ph->image = calloc(1, ph->image_size);
	ph->lookup_result = PS_OK;
	ph->writes_before_failure = -1;
	ph->seed = 12345;

	header = fake_header(ph);
	header->magic = TDSTAT_REGION_MAGIC;
	tdstat_region_header_describe(header, capacity);
	header->region_size = ph->image_size;
	header->control.window_start_ns = now;
	header->control.window_end_ns = now;
	header->status.high_water = used;
	header->status.capacity = capacity;
	header->status.start_ns = now;
	header->status.pid = getpid();
}

void fake_target_add_marks(struct ps_prochandle *ph)
{
	struct tdstat_region_header *header = fake_header(ph);
	uint32_t capacity = header->record_capacity;
	size_t marks = (size_t)(capacity + TDSTAT_CHANGES_BLOCK - 1) / TDSTAT_CHANGES_BLOCK * TDSTAT_CHANGES_BLOCK;
	size_t offset = ph->image_size;
	unsigned char *image = realloc(ph->image, offset + marks * sizeof(uint32_t));

	if (!image)
		abort();
	memset(image + offset, 0, marks * sizeof(uint32_t));
	ph->image = image;
	ph->image_size = offset + marks * sizeof(uint32_t);
	header = fake_header(ph);
	header->changes_offset = (uint32_t)offset;
	header->region_size = ph->image_size;
}

uint32_t *fake_mark(struct ps_prochandle *ph, uint32_t index)
{
	struct tdstat_region_header *header = fake_header(ph);

	if (!header->changes_offset)
		return NULL;
	return (uint32_t *)(ph->image + header->changes_offset) + tdstat_change_slot(index);
}

void fake_target_destroy(struct ps_prochandle *ph)
{
	free(ph->image);
	ph->image = NULL;
	pthread_mutex_destroy(&ph->lock);
}

struct tdstat_region_header *fake_header(struct ps_prochandle *ph)
{
	return (struct tdstat_region_header *)ph->image;
}

struct tdstat_record *fake_record(struct ps_prochandle *ph, uint32_t index)
{
	return (struct tdstat_record *)(ph->image + sizeof(struct tdstat_region_header)) + index;
}

struct tdstat_record_copy *fake_copy(struct ps_prochandle *ph, uint32_t index)
{
	struct tdstat_record *record = fake_record(ph, index);

	return &record->copy[record->seq & 1];
}

/* The part of [address, address + size) inside the image, or NULL. */
static unsigned char *image_range(struct ps_prochandle *ph, psaddr_t address, size_t size)
{
	uintptr_t at = (uintptr_t)address;

	if (at < FAKE_REGION_ADDRESS || at - FAKE_REGION_ADDRESS > ph->image_size ||
	    size > ph->image_size - (at - FAKE_REGION_ADDRESS))
		return NULL;
	return ph->image + (at - FAKE_REGION_ADDRESS);
}

ps_err_e ps_pglobal_lookup(struct ps_prochandle *ph, const char *object_name, const char *sym_name,
			   psaddr_t *sym_addr)
{
	ps_err_e result;

	pthread_mutex_lock(&ph->lock);
	strncpy(ph->last_object, object_name ? object_name : "", sizeof(ph->last_object) - 1);
	result = ph->lookup_result;
	pthread_mutex_unlock(&ph->lock);
	if (result == PS_OK && strcmp(sym_name, TDSTAT_REGION_SYMBOL) != 0)
		result = PS_NOSYM;
	if (result == PS_OK)
		*sym_addr = (psaddr_t)FAKE_REGION_ADDRESS;
	return result;
}

ps_err_e ps_pdread(struct ps_prochandle *ph, psaddr_t address, void *buffer, size_t size)
{
	ps_err_e result = PS_OK;
	unsigned char *source;

	pthread_mutex_lock(&ph->lock);
	ph->reads++;
	ph->read_bytes += size;
	source = image_range(ph, address, size);
	if (ph->fail_reads) {
		result = PS_ERR;
	} else if (ph->random_reads) {
		for (size_t i = 0; i < size; i++)
			((unsigned char *)buffer)[i] = (unsigned char)rand_r(&ph->seed);
	} else if (!source) {
		result = PS_BADADDR;
	} else {
		size_t cut = ph->on_read ? ph->on_read(ph, size, false) : 0;

		if (cut > 0 && cut < size) {
			memcpy(buffer, source, cut);
			ph->on_read(ph, size, true);
			memcpy((unsigned char *)buffer + cut, source + cut, size - cut);
		} else {
			memcpy(buffer, source, size);
		}
		/* A reader of records sees a writer publish between its
		 * reads: each such read sees another seq. */
		if (ph->torn_reads > 0 && source >= (unsigned char *)fake_record(ph, 0)) {
			((unsigned char *)buffer)[0] += (unsigned char)ph->torn_reads;
			ph->torn_reads--;
		}
	}
	pthread_mutex_unlock(&ph->lock);
	return result;
}

ps_err_e ps_pdwrite(struct ps_prochandle *ph, psaddr_t address, const void *buffer, size_t size)
{
	ps_err_e result = PS_OK;
	unsigned char *target;

	if (ph->before_write)
		ph->before_write(ph, address, buffer, size);
	pthread_mutex_lock(&ph->lock);
	ph->writes++;
	target = image_range(ph, address, size);
	if (ph->writes_before_failure == 0)
		result = PS_ERR;
	else if (!target)
		result = PS_BADADDR;
	else
		memcpy(target, buffer, size);
	if (ph->writes_before_failure >= 0)
		ph->writes_before_failure--;
	pthread_mutex_unlock(&ph->lock);
	return result;
}

ps_err_e ps_ptread(struct ps_prochandle *ph, psaddr_t address, void *buffer, size_t size)
{
	return ps_pdread(ph, address, buffer, size);
}

ps_err_e ps_ptwrite(struct ps_prochandle *ph, psaddr_t address, const void *buffer, size_t size)
{
	return ps_pdwrite(ph, address, buffer, size);
}

/* The CPU clock libc_db reads is then the test's own. */
pid_t ps_getpid(struct ps_prochandle *ph)
{
	return getpid();
}
