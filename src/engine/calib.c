/*
 * calib.c - the fixed texts a query's cosines are measured against, and
 * the null they make with the vectors searched (see calib.h).
 */
#include "engine/calib.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "mnemo.h"

/* Everyday sentences on unrelated topics, as notes are written, in the
 * languages multilingual models are used for. Changing them changes every
 * vector score: bump CALIB_VERSION, and they are embedded again. */
const char *const calib_texts[CALIB_NTEXTS] = {
    "The quarterly report is due at the end of the month",
    "Bought a new pair of running shoes on sale",
    "The train to the airport was delayed by twenty minutes",
    "Meeting notes: agreed to postpone the launch until the audit is done",
    "Remember to water the tomatoes before leaving",
    "The wifi in the hotel kept dropping all evening",
    "She prefers window seats on long flights",
    "Paid the electricity bill online",
    "The cat knocked a glass off the kitchen table",
    "Finished reading a novel about a lighthouse keeper",
    "Our neighbour is renovating the attic, lots of drilling",
    "The museum is closed on Mondays",
    "Grandma's recipe uses twice as much butter as the book says",
    "The printer on the third floor is out of toner again",
    "Tried the new Thai place downtown, the curry was too sweet",
    "The kids built a fort out of couch cushions",
    "Renewed the car insurance for another year",
    "The hiking trail was muddy after the storm",
    "A reminder that the library books are due on Friday",
    "Spent the afternoon cleaning out the garage",
    "The concert tickets sold out in ten minutes",
    "Need to call the plumber about the dripping tap",
    "The conference keynote was about climate adaptation",
    "Lost my umbrella on the bus",
    "Planted tulip bulbs along the fence",
    "The dentist appointment moved to next Thursday",
    "Watched a documentary about deep sea creatures",
    "The elevator in our building is being inspected",
    "Coffee beans from Ethiopia taste fruity",
    "Sent the invoice to the client with net thirty terms",
    "The baby slept through the night for the first time",
    "Booked a campsite by the lake for August",
    "The software update broke the bluetooth connection",
    "My brother is moving to Canada next spring",
    "Learned to bake sourdough during the winter",
    "The garden hose has a leak near the tap",
    "Voted in the local election this morning",
    "The bakery on the corner closes early on Sundays",
    "Our team retrospective ran over time",
    "Found an old photo album in the attic",
    "The mechanic said the brakes need replacing soon",
    "A thunderstorm knocked out power for two hours",
    "The violin lessons start again in September",
    "Ordered a birthday cake with strawberries",
    "The password policy now requires twelve characters",
    "Walked the dog along the river at sunset",
    "The apartment lease ends in November",
    "Took the ferry across the bay to visit friends",
    "The recipe calls for fresh basil and pine nuts",
    "Our landlord finally fixed the heating",
    "The football match ended in a draw",
    "Applied for a passport renewal",
    "The chess club meets every Wednesday evening",
    "Spilled coffee on the keyboard, some keys stick now",
    "The marathon route passes by the old harbour",
    "Sorted the recycling and took out the bins",
    "The pharmacy was out of the allergy tablets",
    "Painted the spare bedroom a pale green",
    "The quarterly board meeting is in the main hall",
    "The bridge is closed for repairs this weekend",
    "Started a vegetable patch on the balcony",
    "The podcast episode on ancient Rome was fascinating",
    "Cancelled the gym membership",
    "The school play is on Thursday at six",
    "Transferred money to the savings account",
    "The hotel breakfast included fresh pastries",
    "The database backup finished overnight without errors",
    "The orchestra played a symphony by Brahms",
    "Our flight was rerouted through Frankfurt",
    "The printer jammed twice during the presentation",
    "My sister got engaged last weekend",
    "The snow made the roads slippery this morning",
    "Bought a second-hand bicycle for commuting",
    "The tax office sent a letter about last year",
    "Repainted the fence around the garden",
    "The new phone has a much better camera",
    "The seminar on machine learning was fully booked",
    "The picnic was ruined by wasps",
    "Swapped the winter tyres for summer ones",
    "The air conditioner makes a rattling noise",
    "The volunteer shift at the food bank starts at nine",
    "Went to an exhibition of modern sculpture",
    "The neighbour's dog barks whenever the mail arrives",
    "Ran out of printer paper during the exam",
    "The bus schedule changes in the summer",
    "Made pancakes for breakfast on Saturday",
    "The sofa delivery is expected between two and five",
    "A colleague shared a great spreadsheet template",
    "The lighthouse tour was cancelled due to wind",
    "The knitting group meets at the community centre",
    "The soup needed more salt",
    "Fixed a squeaky door hinge with some oil",
    "The wedding invitation arrived in the post",
    "Our internet provider raised the monthly price",
    "The astronomy club saw Jupiter's moons last night",
    "Cleaned the windows before the guests arrived",
    "The translation of the manual had many errors",
    "The zoo opened a new penguin enclosure",
    "Wrote a thank-you note to the host",
    "The pottery class made bowls this week",
    "The river flooded the lower fields in spring",
    "The new manager introduced weekly one-on-ones",
    "Dropped off the dry cleaning on the way to work",
    "The farmers market sells honey from local bees",
    "Upgraded the laptop's memory to sixteen gigabytes",
    "The theatre was half empty on a rainy Tuesday",
    "A wasp nest under the roof needs removing",
    "The choir rehearses every Monday night",
    "Signed up for a first aid course",
    "The crossword in the weekend paper was hard",
    "The parking garage raised its hourly rate",
    "Picked apples at the orchard with the kids",
    "The radio station played jazz all night",
    "The contract renewal needs a signature by Friday",
    "Our cousin visited from Australia for a week",
    "The mountain cabin has no mobile signal",
    "The soap dispenser in the bathroom is broken",
    "The ice cream shop has a new pistachio flavour",
    "The city marathon closes several streets on Sunday",
    "Replaced the batteries in the smoke alarm",
    "The history lecture covered the industrial revolution",
    "Our old car finally failed its inspection",
    "Sent flowers for a friend's anniversary",
    "The office plants need watering twice a week",
    "The sailing trip was postponed because of fog",
    "会议改到下周三下午两点",
    "周末和朋友去爬山，天气很好",
    "冰箱里的牛奶过期了",
    "这本书的翻译很流畅",
    "明天早上要去银行办理业务",
    "新来的同事很会做饭",
    "地铁今天停运了一个小时",
    "孩子们在公园里放风筝",
    "来週の出張は大阪になりました",
    "駅前のパン屋さんが閉店した",
    "雨の日は洗濯物が乾かない",
    "週末に美術館へ行く予定です",
    "Der Zug nach Berlin hatte eine Stunde Verspätung",
    "Wir haben den Keller aufgeräumt",
    "Am Samstag gehen wir auf den Flohmarkt",
    "El restaurante del puerto tiene buen pescado",
    "Mañana hay reunión con el equipo de ventas",
    "Compramos muebles nuevos para el salón",
    "La réunion est reportée à lundi prochain",
    "Nous avons visité un vieux château en Bretagne",
    "Il pleut depuis trois jours sans arrêt",
    "A reunião foi adiada para a próxima semana",
    "Il concerto di stasera è stato annullato",
    "De fietsenstalling bij het station is vol"};

size_t calib_distinct(float *refs, size_t n, int dims)
{
    size_t d = (size_t)(dims > 0 ? dims : 0), k = 0;
    for (size_t i = 0; i < n; i++) {
        const float *r = refs + i * d;
        int zero = 1, seen = 0;
        for (size_t j = 0; j < d && zero; j++)
            zero = r[j] == 0;
        for (size_t j = 0; j < k && !zero && !seen; j++)
            seen = memcmp(refs + j * d, r, d * sizeof *r) == 0;
        if (zero || seen)
            continue;
        if (k != i)
            memmove(refs + k * d, r, d * sizeof *r);
        k++;
    }
    return k;
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median_sorted(const double *v, size_t n)
{
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

void calib_ref_cosines(calib_null *nl, double *cs, size_t n)
{
    nl->ref_n = n;
    nl->ref_mean = nl->ref_sd = 0;
    if (!n)
        return;
    /* A fixed text about what the query asks is no sample of unrelated
     * text: values more than CALIB_CLIP robust deviations (1.4826 times
     * the median absolute deviation) above the median are left out. */
    qsort(cs, n, sizeof *cs, by_value);
    double med = median_sorted(cs, n);
    double *dev = malloc(n * sizeof *dev);
    double top = INFINITY;
    if (dev) {
        for (size_t i = 0; i < n; i++)
            dev[i] = fabs(cs[i] - med);
        qsort(dev, n, sizeof *dev, by_value);
        top = med + CALIB_CLIP * 1.4826 * median_sorted(dev, n);
        free(dev);
    }
    double s1 = 0, s2 = 0;
    size_t k = 0;
    for (size_t i = 0; i < n && cs[i] <= top; i++, k++) {
        s1 += cs[i];
        s2 += cs[i] * cs[i];
    }
    nl->ref_mean = s1 / (double)k;
    double var = s2 / (double)k - nl->ref_mean * nl->ref_mean;
    nl->ref_sd = var > 0 ? sqrt(var) : 0;
}

int calib_ref(calib_null *nl, const float *refs, size_t ref_n, const float *q, int dims)
{
    double *cs = malloc((ref_n ? ref_n : 1) * sizeof *cs);
    if (!cs)
        return MNEMO_NOMEM;
    double qq = 0;
    for (int j = 0; j < dims; j++)
        qq += (double)q[j] * q[j];
    size_t n = 0;
    for (size_t i = 0; qq > 0 && i < ref_n; i++) {
        const float *r = refs + i * (size_t)dims;
        double dot = 0, rr = 0;
        for (int j = 0; j < dims; j++) {
            dot += (double)q[j] * r[j];
            rr += (double)r[j] * r[j];
        }
        if (rr > 0)
            cs[n++] = dot / sqrt(qq * rr);
    }
    calib_ref_cosines(nl, cs, n);
    free(cs);
    return MNEMO_OK;
}

int calib_z(const calib_null *nl, double cs, double prior, double *z, double *rest)
{
    /* The others: the candidate out of the vectors searched. */
    double n = (double)nl->n, nw = n > 1 ? n - 1 : 0;
    double mw = 0, vw = 0;
    if (nw > 0) {
        mw = (nl->mean * n - cs) / nw;
        vw = ((nl->sd * nl->sd + nl->mean * nl->mean) * n - cs * cs) / nw - mw * mw;
        if (vw < 0)
            vw = 0;
    }
    /* The fixed texts weigh as PRIOR of the vectors searched when the
     * model gave each its own vector; a static table that knows few of
     * their words (and gives many of them the vector of "the") counts
     * only its distinct ones, and those for less. */
    double nr = (double)nl->ref_n, rho = nr / CALIB_NTEXTS, nre = nr > 0 ? prior * rho * rho : 0;
    *z = 0;
    *rest = nw > 0 ? mw : nl->ref_mean;
    if (nw + (nre < nr ? nre : nr) < CALIB_MIN)
        return 0;
    double w = nw / (nw + nre);
    double d = mw - nl->ref_mean;
    double mu = w * mw + (1 - w) * nl->ref_mean;
    double var = w * vw + (1 - w) * nl->ref_sd * nl->ref_sd + w * (1 - w) * d * d;
    *z = (cs - mu) / (var > 1e-8 ? sqrt(var) : 1e-4); /* the others all alike */
    return 1;
}
