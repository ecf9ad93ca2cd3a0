#ifndef STORESH_FILES_H
#define STORESH_FILES_H

/// Swaps two paths in one step (Linux renameat2 with RENAME_EXCHANGE): each name then holds what the other held,
/// and no moment passes in which either name is missing. 0 on success; -1 with errno set otherwise (EINVAL or
/// ENOSYS where the file system or the kernel cannot exchange).
int storesh_rename_exchange(const char *first, const char *second);

#endif
