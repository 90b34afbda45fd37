/*
 * media.c - media file names, content sniffing and labels (see media.h).
 *
 * The signatures are those of the WHATWG MIME Sniffing standard and the
 * formats' own specifications: PNG, JPEG, GIF, WebP (RIFF ... WEBP),
 * HEIC/HEIF and M4A (ISO BMFF "ftyp" brands), MP3 (ID3 tag or an MPEG
 * audio frame header), AAC (ADTS), WAV (RIFF ... WAVE), Ogg (Vorbis and
 * Opus) and FLAC.
 */
#include "text/media.h"

#include <string.h>
#include <strings.h>

#include "mnemo.h"

static const struct {
    const char *ext;
    int modality;
} exts[] = {
    {"jpg", MEDIA_IMAGE},  {"jpeg", MEDIA_IMAGE}, {"png", MEDIA_IMAGE}, {"webp", MEDIA_IMAGE},
    {"gif", MEDIA_IMAGE},  {"heic", MEDIA_IMAGE}, {"heif", MEDIA_IMAGE}, {"mp3", MEDIA_AUDIO},
    {"wav", MEDIA_AUDIO},  {"ogg", MEDIA_AUDIO},  {"opus", MEDIA_AUDIO}, {"m4a", MEDIA_AUDIO},
    {"aac", MEDIA_AUDIO},  {"flac", MEDIA_AUDIO},
};

int media_of_name(const char *name)
{
    const char *slash = strrchr(name, '/');
    const char *dot = strrchr(slash ? slash + 1 : name, '.');
    if (!dot || dot[1] == 0)
        return 0;
    for (size_t i = 0; i < sizeof exts / sizeof *exts; i++)
        if (strcasecmp(dot + 1, exts[i].ext) == 0)
            return exts[i].modality;
    return 0;
}

static int at(const unsigned char *b, size_t n, size_t off, const char *sig, size_t len)
{
    return n >= off + len && memcmp(b + off, sig, len) == 0;
}

/* An ISO BMFF file's major brand: HEIF images and MPEG-4 audio. */
static const char *ftyp(const unsigned char *b, size_t n)
{
    static const struct {
        const char *brand, *mime;
    } brands[] = {
        {"heic", "image/heic"}, {"heix", "image/heic"}, {"heim", "image/heic"},
        {"heis", "image/heic"}, {"hevc", "image/heic"}, {"hevx", "image/heic"},
        {"mif1", "image/heif"}, {"msf1", "image/heif"}, {"heif", "image/heif"},
        {"M4A ", "audio/mp4"},  {"M4B ", "audio/mp4"},  {"M4P ", "audio/mp4"},
    };
    if (!at(b, n, 4, "ftyp", 4) || n < 12)
        return NULL;
    for (size_t i = 0; i < sizeof brands / sizeof *brands; i++)
        if (memcmp(b + 8, brands[i].brand, 4) == 0)
            return brands[i].mime;
    return NULL;
}

/* An MPEG audio frame header: 11 sync bits, a version other than the
 * reserved one; layer I-III is MP3 and its kin, layer bits 00 with the
 * 12-bit sync is AAC's ADTS. */
static const char *mpeg_frame(const unsigned char *b, size_t n)
{
    if (n < 4 || b[0] != 0xFF || (b[1] & 0xE0) != 0xE0)
        return NULL;
    int version = (b[1] >> 3) & 3, layer = (b[1] >> 1) & 3;
    if (layer == 0)
        return (b[1] & 0xF6) == 0xF0 ? "audio/aac" : NULL;
    int bitrate = b[2] >> 4, rate = (b[2] >> 2) & 3;
    if (version == 1 || bitrate == 15 || bitrate == 0 || rate == 3)
        return NULL;
    return "audio/mpeg";
}

const char *media_sniff(const void *p, size_t n)
{
    const unsigned char *b = p;
    if (at(b, n, 0, "\x89PNG\r\n\x1a\n", 8))
        return "image/png";
    if (n >= 3 && b[0] == 0xFF && b[1] == 0xD8 && b[2] == 0xFF)
        return "image/jpeg";
    if (at(b, n, 0, "GIF87a", 6) || at(b, n, 0, "GIF89a", 6))
        return "image/gif";
    if (at(b, n, 0, "RIFF", 4) && at(b, n, 8, "WEBPVP", 6))
        return "image/webp";
    if (at(b, n, 0, "RIFF", 4) && at(b, n, 8, "WAVE", 4))
        return "audio/wav";
    if (at(b, n, 0, "OggS", 4))
        return "audio/ogg";
    if (at(b, n, 0, "fLaC", 4))
        return "audio/flac";
    if (at(b, n, 0, "ID3", 3))
        return "audio/mpeg";
    const char *m = ftyp(b, n);
    return m ? m : mpeg_frame(b, n);
}

int media_of_mime(const char *mime)
{
    if (!mime)
        return 0;
    if (strncmp(mime, "image/", 6) == 0)
        return MEDIA_IMAGE;
    if (strncmp(mime, "audio/", 6) == 0)
        return MEDIA_AUDIO;
    return 0;
}

const char *media_name(int modality) { return modality == MEDIA_AUDIO ? "audio" : "image"; }

int media_label(buf *out, int modality, const char *path)
{
    buf_printf(out, "%s file: %s", modality == MEDIA_AUDIO ? "Audio" : "Image", path);
    return buf_err(out);
}
